/** The JetStream bus's messages: how a request's batches become messages, and back (codec.ts, busMessages). */
import t from 'tap';
import { deflateSync } from 'node:zlib';
import { UnknownFormatError, batchJson, decodeBatch, encodeJson } from '../../src/bus/jetstream/codec.ts';
import { busMessages, headersOf } from '../../src/bus/jetstream/jetstream-bus.ts';
import type { CapturedEvent, EventBatch } from '../../src/core/event.ts';
import { partitionOf } from '../../src/core/partition.ts';

const event = (i: number, distinctId = `user-${i % 7}`): CapturedEvent => ({
  projectId: 1,
  uuid: `00000000-0000-7000-8000-${String(i).padStart(12, '0')}`,
  event: '$pageview',
  distinctId,
  timestamp: 1_767_225_600_000 + i,
  properties: { $current_url: `https://example.com/p/${i}`, $browser: 'Chrome', n: i },
  receivedAt: 1_767_225_600_000,
});
const warning = {
  projectId: 1,
  type: 'event_dropped_missing_distinct_id',
  source: 'capture' as const,
  details: { event: 'x' },
  timestamp: 1_767_225_600_000,
};
/** A batch read from the bus with each event's properties parsed back from their text. */
const expanded = (batch: EventBatch): EventBatch => ({
  ...batch,
  events: batch.events.map(({ propertiesJson, ...e }) => ({
    ...e,
    properties:
      propertiesJson === undefined ? e.properties : (JSON.parse(propertiesJson) as Record<string, unknown>),
  })),
});
const batchOf = (n: number, from = 0): EventBatch => ({
  lane: 'live',
  events: Array.from({ length: n }, (_, i) => event(from + i)),
  warnings: [warning],
});

t.test('a large batch is deflated and reads back the same; a small one stays plain JSON', (t) => {
  const large = batchOf(100);
  const json = batchJson(large);
  const deflated = encodeJson(json, 'deflate');
  t.equal(deflated.encoding, 'deflate');
  t.ok(deflated.data.byteLength < json.length / 3, `${deflated.data.byteLength} of ${json.length} bytes`);
  t.same(expanded(decodeBatch(deflated.data, 'deflate')), large);

  const small = batchOf(1);
  const plain = encodeJson(batchJson(small), 'deflate');
  t.equal(plain.encoding, 'json', 'under 2 KiB: not worth deflating');
  t.same(expanded(decodeBatch(plain.data, undefined)), small);
  t.same(expanded(decodeBatch(plain.data, '')), small, 'an empty header is no encoding');

  const none = encodeJson(json, 'none');
  t.equal(none.encoding, 'json', 'WEIR_BUS_COMPRESSION=none: plain, whatever the size');
  t.same(expanded(decodeBatch(none.data)), large, 'ingest reads plain messages (compression off)');
  t.end();
});

t.test(
  'a damaged message is an Error; one in a format this Weir does not know, an UnknownFormatError',
  (t) => {
    const unknown = (f: () => unknown, label: string): void => {
      try {
        f();
        t.fail(`${label}: read`);
      } catch (err) {
        t.ok(err instanceof UnknownFormatError, `${label}: ${String(err)}`);
      }
    };
    const damaged = (f: () => unknown, label: string): void => {
      try {
        f();
        t.fail(`${label}: read`);
      } catch (err) {
        t.ok(err instanceof Error && !(err instanceof UnknownFormatError), `${label}: ${String(err)}`);
      }
    };
    const json = batchJson(batchOf(100));
    unknown(() => decodeBatch(json, 'gzip'), 'an encoding it does not know');
    unknown(
      () => decodeBatch(deflateSync(Buffer.from('{"v":3,"lane":"live","events":[],"more":1}')), 'deflate'),
      'a later version',
    );
    const deflated = Buffer.from(encodeJson(json, 'deflate').data);
    deflated[deflated.length - 1]! ^= 0xff; // the zlib checksum no longer matches
    damaged(() => decodeBatch(deflated, 'deflate'), 'a bad checksum');
    damaged(() => decodeBatch(json, 'deflate'), 'plain JSON said to be deflated');
    damaged(() => decodeBatch(Buffer.from('{"v":2,"lane":"live","eve')), 'cut short');
    damaged(() => decodeBatch(Buffer.from('{"v":1,"lane":"nowhere","events":[]}')), 'no such lane');
    damaged(() => decodeBatch(Buffer.from('[1,2]')), 'not a batch');
    t.end();
  },
);

t.test('busMessages: one message per partition, its Content-Encoding in a header', (t) => {
  const batch = batchOf(100);
  const messages = busMessages([batch], 4, 1024 * 1024, 'deflate');
  t.ok(messages.length > 1 && messages.length <= 4);
  const seen: CapturedEvent[] = [];
  for (const m of messages) {
    const read = expanded(decodeBatch(m.data, headersOf(m)?.get('Content-Encoding')));
    const partitions = new Set(read.events.map((e) => partitionOf(e.projectId, e.distinctId, 4)));
    t.equal(partitions.size, 1, `${m.subject}: one partition`);
    t.equal(m.subject, `events.live.${[...partitions][0]}`);
    seen.push(...read.events);
  }
  t.same(seen.map((e) => e.uuid).sort(), batch.events.map((e) => e.uuid).sort(), 'every event once');
  t.equal(busMessages([batchOf(1)], 4, 1024 * 1024, 'deflate')[0]!.encoding, 'json');
  t.equal(headersOf(busMessages([batchOf(1)], 4, 1024 * 1024, 'deflate')[0]!), undefined);
  t.end();
});

t.test('busMessages: a batch over the size bound is cut in order, each piece under it', (t) => {
  const batch = batchOf(300);
  const maxBytes = 8 * 1024;
  const messages = busMessages([batch], 1, maxBytes, 'deflate');
  t.ok(messages.length >= Math.ceil(batchJson(batch).length / maxBytes), `${messages.length} pieces`);
  const read = messages.map((m) => decodeBatch(m.data, m.encoding === 'json' ? undefined : m.encoding));
  for (const r of read) t.ok(batchJson(r).length <= maxBytes);
  t.same(
    read.flatMap((r) => expanded(r).events),
    batch.events,
    'in order, each event once',
  );
  t.same(
    read.map((r) => r.warnings.length),
    [1, ...read.slice(1).map(() => 0)],
    'warnings ride with the first piece',
  );
  const again = busMessages([batch], 1, maxBytes, 'deflate');
  t.same(
    again.map((m) => m.msgID),
    messages.map((m) => m.msgID),
    'the same request makes the same message ids (a retry is deduplicated)',
  );
  t.equal(new Set(messages.map((m) => m.msgID)).size, messages.length, 'each piece its own id');
  t.end();
});

t.test('historical events stay one ordered sequence, whatever the partitions', (t) => {
  const batch: EventBatch = { ...batchOf(50), lane: 'historical' };
  const messages = busMessages([batch], 8, 1024 * 1024, 'none');
  t.equal(messages.length, 1);
  t.equal(messages[0]!.subject, 'events.historical.0');
  t.same(expanded(decodeBatch(messages[0]!.data)).events, batch.events);
  t.end();
});

t.test('over the bus, properties are JSON text beside the few ingest reads; version 1 is still read', (t) => {
  const e = {
    ...event(1),
    properties: {
      $browser: 'Chrome',
      $set: { plan: 'pro' },
      $groups: { company: 'acme' },
      $process_person_profile: true,
      nested: { a: [1, 'two'] },
    },
  };
  const read = decodeBatch(batchJson({ lane: 'live', events: [e], warnings: [] })).events[0]!;
  t.same(
    read.properties,
    { $process_person_profile: true, $set: { plan: 'pro' }, $groups: { company: 'acme' } },
    'only the keys of INGEST_PROPERTY_KEYS the event has',
  );
  t.equal(
    read.propertiesJson,
    JSON.stringify(e.properties),
    'the text capture wrote: the row stores it as is',
  );
  const again = decodeBatch(batchJson({ lane: 'live', events: [read], warnings: [] })).events[0]!;
  t.same(again, read, 'a batch read from the bus is written again unchanged (its text is not re-made)');

  const v1 = Buffer.from(JSON.stringify({ v: 1, lane: 'live', events: [e], warnings: [] }));
  const old = decodeBatch(v1).events[0]!;
  t.same(old, e, 'version 1: properties as values');
  t.equal(old.propertiesJson, undefined);
  t.end();
});
