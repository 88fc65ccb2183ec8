import t from 'tap';
import {
  normalizeDistinctId,
  normalizeEvent,
  type Normalized,
  type RequestContext,
} from '../../src/capture/normalize.ts';
import { MIN_TIMESTAMP_MS, parseTimestamp } from '../../src/capture/timestamp.ts';
import type { CapturedEvent } from '../../src/core/event.ts';
import { wellFormed } from '../../src/core/well-formed.ts';
import { AppError } from '../../src/errors/app-error.ts';

// A server zone other than UTC, so that reading a time without a zone in local time would show.
process.env['TZ'] = 'Asia/Kolkata';

const NOW = Date.UTC(2026, 5, 1, 12, 0, 0);
const HOUR = 3600_000;
const ctx = (extra: Partial<RequestContext> = {}): RequestContext => ({
  projectId: 7,
  now: NOW,
  sentAt: undefined,
  checkEventSize: true,
  clientIp: '',
  anonymizeIps: false,
  geoip: undefined,
  ...extra,
});

function event(result: Normalized): CapturedEvent {
  if (result.kind !== 'event') throw new Error(`expected an event, got a drop (${result.reason})`);
  return result.event;
}

function refusal(item: Record<string, unknown>, c = ctx()): { code: string; attr: string | null } {
  try {
    normalizeEvent(item, 3, c);
  } catch (err) {
    if (err instanceof AppError) return { code: err.code, attr: err.attr };
    throw err;
  }
  throw new Error('accepted');
}

t.test('a plain event comes out ready for the bus', (t) => {
  const e = event(
    normalizeEvent(
      { event: 'e', distinct_id: 'd', properties: { a: 1 }, uuid: 'F47AC10B-58CC-4372-A567-0E02B2C3D479' },
      0,
      ctx(),
    ),
  );
  t.same(e, {
    projectId: 7,
    uuid: 'f47ac10b-58cc-4372-a567-0e02b2c3d479',
    event: 'e',
    distinctId: 'd',
    timestamp: NOW,
    properties: { a: 1 },
    receivedAt: NOW,
  });
  t.end();
});

t.test('distinct_id comes from the event, then properties.distinct_id, then properties.$distinct_id', (t) => {
  const id = (item: Record<string, unknown>) =>
    event(normalizeEvent({ event: 'e', ...item }, 0, ctx())).distinctId;
  t.equal(id({ distinct_id: 'top', properties: { distinct_id: 'p', $distinct_id: 'q' } }), 'top');
  t.equal(id({ properties: { distinct_id: 'p', $distinct_id: 'q' } }), 'p');
  t.equal(id({ properties: { $distinct_id: 'q' } }), 'q');
  t.equal(id({ distinct_id: null, properties: { distinct_id: 'p' } }), 'p', 'a null falls through');
  t.equal(id({ distinct_id: 0 }), '0', 'zero is an id');
  t.equal(id({ distinct_id: false }), 'false');
  t.end();
});

t.test('silent drops', (t) => {
  const drop = (item: Record<string, unknown>) => {
    const r = normalizeEvent(item, 0, ctx());
    return r.kind === 'drop' ? r.reason : 'kept';
  };
  t.equal(drop({ distinct_id: 'd' }), 'missing_event_name');
  t.equal(drop({ event: '', distinct_id: 'd' }), 'missing_event_name');
  t.equal(drop({ event: null, distinct_id: 'd' }), 'missing_event_name');
  t.equal(drop({ event: 'e' }), 'missing_distinct_id');
  t.equal(drop({ event: 'e', distinct_id: null }), 'missing_distinct_id');
  t.equal(drop({ event: 'e', distinct_id: '' }), 'empty_distinct_id');
  t.equal(drop({ event: 'e', properties: { distinct_id: '' } }), 'empty_distinct_id');
  t.equal(drop({ event: 'e', distinct_id: ' ' }), 'kept', 'a space is an id');
  t.end();
});

t.test('refusals', (t) => {
  t.same(refusal({ event: 'e', distinct_id: 'd', properties: 'x' }), {
    code: 'invalid_event',
    attr: 'properties',
  });
  t.same(refusal({ event: 'e', distinct_id: 'd', properties: [] }), {
    code: 'invalid_event',
    attr: 'properties',
  });
  t.same(refusal({ event: 'e', distinct_id: 'd', timestamp: 1 }), {
    code: 'invalid_event',
    attr: 'timestamp',
  });
  t.same(refusal({ event: ['e'], distinct_id: 'd' }), { code: 'invalid_event', attr: 'event' });
  // Shape errors refuse the request even when the event would otherwise be dropped.
  t.same(refusal({ properties: 7 }), { code: 'invalid_event', attr: 'properties' });

  const group = (props: Record<string, unknown>) =>
    refusal({ event: '$groupidentify', distinct_id: 'd', properties: props });
  t.same(group({ $group_key: 'k' }), { code: 'invalid_group', attr: 'properties.$group_type' });
  t.same(group({ $group_type: 't' }), { code: 'invalid_group', attr: 'properties.$group_key' });
  t.same(group({ $group_type: 't', $group_key: 1 }), {
    code: 'invalid_group',
    attr: 'properties.$group_key',
  });
  t.same(group({ $group_type: 'x'.repeat(401), $group_key: 'k' }), {
    code: 'invalid_group',
    attr: 'properties.$group_type',
  });
  t.same(group({ $group_type: 't', $group_key: 'x'.repeat(401) }), {
    code: 'invalid_group',
    attr: 'properties.$group_key',
  });
  t.equal(
    normalizeEvent(
      {
        event: '$groupidentify',
        distinct_id: 'd',
        properties: { $group_type: 'x'.repeat(400), $group_key: 'k'.repeat(400) },
      },
      0,
      ctx(),
    ).kind,
    'event',
    '400 characters is allowed',
  );

  t.same(refusal({ event: '$create_alias', distinct_id: 'd' }), {
    code: 'invalid_alias',
    attr: 'properties.alias',
  });
  t.same(refusal({ event: '$create_alias', distinct_id: 'd', properties: { alias: 1 } }), {
    code: 'invalid_alias',
    attr: 'properties.alias',
  });
  for (const name of ['survey sent', 'survey shown', 'survey dismissed'])
    t.same(
      refusal({ event: name, distinct_id: 'd', properties: {} }),
      { code: 'missing_survey_id', attr: 'properties.$survey_id' },
      name,
    );
  t.equal(
    normalizeEvent({ event: 'survey sent', distinct_id: 'd', properties: { $survey_id: 's' } }, 0, ctx())
      .kind,
    'event',
  );
  t.end();
});

t.test('one event over 1 MiB is payload_too_large, when the body was big enough to hold one', (t) => {
  const big = { event: 'e', distinct_id: 'd', properties: { p: 'a'.repeat(1024 * 1024) } };
  t.same(refusal(big), { code: 'payload_too_large', attr: 'batch[3]' });
  t.same(
    refusal({ ...big, properties: { p: '€'.repeat(350_000) } }),
    { code: 'payload_too_large', attr: 'batch[3]' },
    'counted in UTF-8 bytes',
  );
  t.equal(
    normalizeEvent(big, 0, ctx({ checkEventSize: false })).kind,
    'event',
    'not checked when the body is small',
  );
  t.equal(
    normalizeEvent({ ...big, properties: { p: 'a'.repeat(1000 * 1024) } }, 0, ctx()).kind,
    'event',
    'under 1 MiB',
  );
  t.end();
});

t.test(
  '$set and $set_once at the top of an event join its properties (the top-level value wins, as in PostHog)',
  (t) => {
    const e = event(
      normalizeEvent(
        {
          event: '$identify',
          distinct_id: 'd',
          $set: { a: 1, b: 1 },
          $set_once: { c: 1 },
          properties: { $set: { b: 2 } },
        },
        0,
        ctx(),
      ),
    );
    t.same(e.properties, { $set: { a: 1, b: 1 }, $set_once: { c: 1 } });
    t.end();
  },
);

t.test('normalizeDistinctId', (t) => {
  t.equal(normalizeDistinctId(12), '12');
  t.equal(normalizeDistinctId({ b: [1] }), '{"b":[1]}');
  t.equal(normalizeDistinctId('a\u0000b'), 'a\uFFFDb');
  t.equal(normalizeDistinctId('a\ud800'), 'a\uFFFD');
  t.equal(normalizeDistinctId('x'.repeat(201)), 'x'.repeat(200));
  t.equal(normalizeDistinctId('😀'.repeat(150)), '😀'.repeat(150), '300 UTF-16 units, 150 characters');
  t.equal(normalizeDistinctId('😀'.repeat(201)), '😀'.repeat(200));
  t.equal(normalizeDistinctId(`a${'😀'.repeat(200)}`), `a${'😀'.repeat(199)}`);
  t.end();
});

t.test('wellFormed', (t) => {
  t.equal(wellFormed('ok 😀'), 'ok 😀', 'pairs are kept');
  t.equal(wellFormed('\ud83d'), '\uFFFD', 'a lone high surrogate');
  t.equal(wellFormed('\ude00x'), '\uFFFDx', 'a lone low surrogate');
  t.equal(wellFormed('\ude00\ud83d'), '\uFFFD\uFFFD', 'reversed pair');
  t.equal(wellFormed('\ud83d\ud83d\ude00'), '\uFFFD😀');
  t.end();
});

t.test('timestamp', (t) => {
  const ts = (item: Record<string, unknown>, c = ctx()) => {
    const r = normalizeEvent({ event: 'e', distinct_id: 'd', ...item }, 0, c);
    if (r.kind !== 'event') throw new Error('dropped');
    return { ms: r.event.timestamp, warning: r.warning?.type };
  };
  const iso = (ms: number) => new Date(ms).toISOString();

  t.same(ts({}), { ms: NOW, warning: undefined }, 'missing is now');
  t.same(ts({ timestamp: null }), { ms: NOW, warning: undefined }, 'null is now');
  t.same(ts({ timestamp: '2024-01-02T03:04:05.678Z' }), {
    ms: Date.UTC(2024, 0, 2, 3, 4, 5, 678),
    warning: undefined,
  });
  t.same(
    ts({ timestamp: '2024-01-02T03:04:05' }),
    { ms: Date.UTC(2024, 0, 2, 3, 4, 5), warning: undefined },
    'no zone is UTC',
  );
  t.same(
    ts({ timestamp: iso(NOW + HOUR - 10_000) }, ctx({ sentAt: NOW + HOUR })),
    { ms: NOW - 10_000, warning: undefined },
    'skew corrected with sent_at',
  );
  t.same(
    ts(
      { timestamp: iso(NOW + HOUR - 10_000), properties: { $ignore_sent_at: true } },
      ctx({ sentAt: NOW + HOUR }),
    ),
    { ms: NOW + HOUR - 10_000, warning: undefined },
    '$ignore_sent_at',
  );
  t.same(ts({ offset: 1500 }), { ms: NOW - 1500, warning: undefined }, 'offset when there is no timestamp');
  t.same(
    ts({ offset: 1500, timestamp: iso(NOW - 99) }),
    { ms: NOW - 99, warning: undefined },
    'timestamp wins over offset',
  );
  t.same(
    ts({ timestamp: iso(NOW + 23 * HOUR) }),
    { ms: NOW + 23 * HOUR, warning: undefined },
    '23 h ahead is kept',
  );
  t.same(
    ts({ timestamp: iso(NOW + 23 * HOUR + 1) }),
    { ms: NOW, warning: 'timestamp_clamped_to_now' },
    'past 23 h is clamped',
  );
  t.same(
    ts({ offset: -24 * HOUR }),
    { ms: NOW, warning: 'timestamp_clamped_to_now' },
    'a negative offset too',
  );
  t.same(ts({ timestamp: 'yesterday' }), { ms: NOW, warning: 'ignored_invalid_timestamp' });
  t.same(ts({ timestamp: '' }), { ms: NOW, warning: 'ignored_invalid_timestamp' });
  t.same(
    ts({ timestamp: '-000001-01-01T00:00:00Z' }),
    { ms: NOW, warning: 'ignored_invalid_timestamp' },
    'before year 1',
  );
  t.same(
    ts({ timestamp: '0001-01-01T00:00:00Z' }),
    { ms: MIN_TIMESTAMP_MS, warning: undefined },
    'year 1 is kept',
  );
  t.same(
    ts({ offset: NOW + 1e15 }),
    { ms: NOW, warning: 'ignored_invalid_timestamp' },
    'an offset out of range',
  );
  t.same(
    ts({ timestamp: '+275760-09-13T00:00:00Z' }, ctx({ sentAt: 0 })),
    { ms: NOW, warning: 'timestamp_clamped_to_now' },
    'skew correction past what a Date holds',
  );

  const r = normalizeEvent({ event: 'e', distinct_id: 'd', timestamp: 'nope' }, 0, ctx());
  t.same(r.kind === 'event' && r.warning, {
    projectId: 7,
    type: 'ignored_invalid_timestamp',
    source: 'capture',
    details: { timestamp: 'nope' },
    timestamp: NOW,
  });
  t.end();
});

t.test('parseTimestamp', (t) => {
  t.equal(parseTimestamp('2024-03-07T10:00:00Z'), Date.UTC(2024, 2, 7, 10));
  t.equal(
    parseTimestamp(' 2024-03-07 10:00 '),
    Date.UTC(2024, 2, 7, 10),
    'space separator, no seconds, no zone',
  );
  t.equal(parseTimestamp('2024-03-07T10:00:00.123456'), Date.UTC(2024, 2, 7, 10, 0, 0, 123));
  t.equal(parseTimestamp('2024-03-07'), Date.UTC(2024, 2, 7), 'a date alone');
  t.equal(parseTimestamp('2024-03-07T10:00:00-05:00'), Date.UTC(2024, 2, 7, 15));
  t.equal(parseTimestamp('nope'), undefined);
  t.equal(parseTimestamp('0000-01-01T00:00:00Z'), undefined, 'year 0 is not kept faithfully by the store');
  t.end();
});

t.test("$ip: the client's address, never over one the event has, none for a project that anonymises", (t) => {
  const withIp = ctx({ clientIp: '203.0.113.9' });
  const props = (item: Record<string, unknown>, c: RequestContext): Record<string, unknown> =>
    event(normalizeEvent({ event: 'e', distinct_id: 'd', ...item }, 0, c)).properties;
  t.same(props({}, withIp), { $ip: '203.0.113.9' }, 'added when the event has none');
  t.same(props({ properties: { $ip: '198.51.100.4' } }, withIp), { $ip: '198.51.100.4' }, 'kept');
  t.same(
    props({ properties: { $ip: null } }, withIp),
    { $ip: '203.0.113.9' },
    'null is none, as PostHog has it',
  );
  t.same(props({ properties: { $ip: '' } }, withIp), { $ip: '203.0.113.9' }, 'and so is empty');
  t.same(props({}, ctx()), {}, 'an unknown address adds nothing');
  const anonymous = ctx({ clientIp: '', anonymizeIps: true });
  t.same(props({ properties: { a: 1, $ip: '198.51.100.4' } }, anonymous), { a: 1 }, 'dropped');
  t.end();
});

t.test('GeoIP sees $ip once it is set, and not at all for a project that anonymises', (t) => {
  const seen: unknown[] = [];
  const geoip = {
    enrich(p: Record<string, unknown>): void {
      seen.push(p['$ip']);
      p['$geoip_country_code'] = 'SE';
    },
  };
  const e = event(
    normalizeEvent({ event: 'e', distinct_id: 'd' }, 0, ctx({ clientIp: '89.160.20.129', geoip })),
  );
  t.same(e.properties, { $ip: '89.160.20.129', $geoip_country_code: 'SE' });
  normalizeEvent(
    { event: 'e', distinct_id: 'd', properties: { $ip: '89.160.20.129' } },
    0,
    ctx({ anonymizeIps: true, geoip }),
  );
  t.same(seen, ['89.160.20.129'], 'not called for the anonymised project');
  t.end();
});
