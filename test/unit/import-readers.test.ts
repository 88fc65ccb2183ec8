/**
 * The readers of `weir import`: JSON lines (with the byte offsets a resume seeks to), CSV as PostHog's export
 * writes it and generic CSV with a mapping, Parquet written here as PostHog's batch export writes it, and
 * gzip and zstd streams (named, and recognised by their first bytes). All in memory.
 */
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import {
  tableToIPC,
  tableFromArrays,
  vectorFromArray,
  TimestampMillisecond,
  Table as ArrowTable,
} from 'apache-arrow';
import { Compression, Table, WriterPropertiesBuilder, writeParquet } from 'parquet-wasm';
import t from 'tap';
import { toImportEvent } from '../../src/import/event-row.ts';
import { decode } from '../../src/import/inputs.ts';
import { columnTargets, parseTarget, readCsv, type ColumnTarget } from '../../src/import/read-csv.ts';
import { readJsonLines } from '../../src/import/read-jsonl.ts';
import { readParquetRows } from '../../src/import/read-parquet.ts';
import type { SourceRow } from '../../src/import/source-row.ts';

async function all(rows: AsyncIterable<SourceRow | SourceRow[]>): Promise<SourceRow[]> {
  const out: SourceRow[] = [];
  for await (const r of rows) {
    if (Array.isArray(r)) out.push(...r);
    else out.push(r);
  }
  return out;
}

const stream = (...chunks: (string | Buffer)[]) => Readable.from(chunks.map((c) => Buffer.from(c)));

const JSONL = '{"event":"a","n":0}\r\n\n{"event":"b","n":1}\n{oops\n{"event":"c","n":2}';

t.test(
  'JSON lines: rows with their offsets, blank lines skipped, bad lines given as unreadable',
  async (t) => {
    // Split mid-line: a line across chunks is one row.
    const rows = await all(readJsonLines(0, stream(JSONL.slice(0, 25), JSONL.slice(25)), { row: 0 }));
    t.same(
      rows.map((r) => [r.kind, r.pos.row, r.pos.start, r.pos.end]),
      [
        ['value', 0, 0, 21],
        ['value', 1, 22, 42],
        ['unreadable', 2, 42, 48],
        ['value', 3, 48, 67],
      ],
    );
    t.same(rows[1]!.kind === 'value' && rows[1]!.value, { event: 'b', n: 1 });
    // A resume seeks to a row's start offset: the stream starts there and numbering goes on from that row.
    const resumed = await all(
      readJsonLines(0, stream(Buffer.from(JSONL).subarray(42)), { row: 2, offset: 42 }),
    );
    t.same(
      resumed.map((r) => [r.pos.row, r.pos.start]),
      [
        [2, 42],
        [3, 48],
      ],
    );
    // Without an offset (a compressed file) the rows before the start are read and skipped.
    const skipped = await all(readJsonLines(0, stream(JSONL), { row: 3 }));
    t.same(
      skipped.map((r) => r.pos.row),
      [3],
    );
  },
);

t.test('gzip and zstd, named or recognised by their magic bytes', async (t) => {
  const text = '{"event":"z","i":1}\n{"event":"z","i":2}\n';
  const gz = gzipSync(text);
  const zst = zstdRawFrame(Buffer.from(text));
  for (const [name, bytes, comp] of [
    ['gzip named', gz, 'gzip'],
    ['gzip sniffed', gz, 'none'],
    ['zstd named', zst, 'zstd'],
    ['zstd sniffed', zst, 'none'],
    ['plain', Buffer.from(text), 'none'],
  ] as const) {
    const rows = await all(readJsonLines(0, decode(Readable.from([bytes]), comp), { row: 0 }));
    t.same(
      rows.map((r) => r.kind === 'value' && r.value),
      [
        { event: 'z', i: 1 },
        { event: 'z', i: 2 },
      ],
      name,
    );
  }
});

t.test("CSV as PostHog's events export writes it", async (t) => {
  const csv = [
    '*.uuid,*.event,*.properties.$browser,*.properties.plan,*.distinct_id,*.timestamp,*.elements_chain,event,person,timestamp',
    '0190a000-0000-7000-8000-000000000001,$pageview,Chrome,"pro, yearly",user-1,2024-03-01T10:00:00.123000Z,,$pageview,user-1,2024-03-01',
    '0190a000-0000-7000-8000-000000000002,"clicked ""buy""",Firefox,,user-2,2024-03-01T10:00:01Z,"a:nth-child=""1""",x,y,z',
    'broken,"unterminated,row',
  ].join('\r\n');
  const rows = await all(readCsv(0, stream(csv), { row: 0 }, new Map()));
  const events = rows.map((r) => (r.kind === 'value' ? r.value : r.reason));
  t.same(events, [
    {
      uuid: '0190a000-0000-7000-8000-000000000001',
      event: '$pageview',
      distinct_id: 'user-1',
      timestamp: '2024-03-01T10:00:00.123000Z',
      properties: { $browser: 'Chrome', plan: 'pro, yearly' },
    },
    {
      uuid: '0190a000-0000-7000-8000-000000000002',
      event: 'clicked "buy"',
      distinct_id: 'user-2',
      timestamp: '2024-03-01T10:00:01Z',
      elements_chain: 'a:nth-child="1"',
      properties: { $browser: 'Firefox' },
    },
    'Quote Not Closed: the parsing is finished with an opening quote at line 4',
  ]);
  const ev = toImportEvent(events[1], 1);
  t.ok(
    ev.ok &&
      (JSON.parse(ev.event.json) as { properties: Record<string, unknown> }).properties['$elements_chain'] ===
        'a:nth-child="1"',
  );
});

t.test(
  'generic CSV: --map, a properties JSON cell, other columns as properties, a resume skips rows',
  async (t) => {
    const csv =
      'name,who,when,props,country\nsignup,u1,2024-01-01 10:00:00,"{""plan"":""pro"",\n""n"":2}",NL\nlogin,u2,1704103200,,DE\n';
    const map = new Map<string, ColumnTarget>([
      ['name', parseTarget('event')],
      ['who', parseTarget('distinct_id')],
      ['when', parseTarget('timestamp')],
      ['props', parseTarget('properties')],
    ]);
    const rows = await all(readCsv(0, stream(csv), { row: 0 }, map));
    t.same(
      rows.map((r) => r.kind === 'value' && r.value),
      [
        {
          event: 'signup',
          distinct_id: 'u1',
          timestamp: '2024-01-01 10:00:00',
          properties: { plan: 'pro', n: 2, country: 'NL' },
        },
        { event: 'login', distinct_id: 'u2', timestamp: '1704103200', properties: { country: 'DE' } },
      ],
    );
    const resumed = await all(readCsv(0, stream(csv), { row: 1 }, map));
    t.same(
      resumed.map((r) => r.pos.row),
      [1],
    );
    t.throws(() => parseTarget('nope'), /not a field/);
    t.same(columnTargets(['event', 'properties.x', 'other'], new Map()), [
      { to: 'event' },
      { to: 'property', name: 'x' },
      { to: 'property', name: 'other' },
    ]);
  },
);

t.test(
  'Parquet as a batch export writes it: timestamps, JSON properties, row groups skipped on resume',
  async (t) => {
    const n = 5;
    const arrow = tableFromArrays({
      uuid: Array.from({ length: n }, (_, i) => `0190a000-0000-7000-8000-00000000000${i}`),
      event: Array.from({ length: n }, (_, i) => `e${i}`),
      distinct_id: Array.from({ length: n }, (_, i) => `d${i}`),
      properties: Array.from({ length: n }, (_, i) => JSON.stringify({ i })),
    });
    const withTs = new ArrowTable({
      ...Object.fromEntries(
        arrow.schema.fields.map((f) => [f.name, arrow.getChildAt(arrow.schema.fields.indexOf(f))!]),
      ),
      timestamp: vectorFromArray(
        Array.from({ length: n }, (_, i) => new Date(Date.UTC(2024, 0, 1) + i * 1000)),
        new TimestampMillisecond(),
      ),
    });
    const bytes = writeParquet(
      Table.fromIPCStream(tableToIPC(withTs, 'stream')),
      new WriterPropertiesBuilder().setCompression(Compression.ZSTD).setMaxRowGroupSize(2).build(),
    );
    const rows = await all(readParquetRows(0, bytes, { row: 0 }));
    t.equal(rows.length, n);
    const ev = toImportEvent(rows[3]!.kind === 'value' ? rows[3]!.value : undefined, 3);
    t.ok(ev.ok);
    if (ev.ok) {
      t.same(JSON.parse(ev.event.json), {
        uuid: '0190a000-0000-7000-8000-000000000003',
        event: 'e3',
        distinct_id: 'd3',
        timestamp: '2024-01-01T00:00:03.000Z',
        properties: { i: 3 },
      });
    }
    const resumed = await all(readParquetRows(0, bytes, { row: 3 }));
    t.same(
      resumed.map((r) => r.pos.row),
      [3, 4],
    );
  },
);

/** A zstd frame of raw (stored) blocks: a valid frame any decoder reads, made without a compressor. */
function zstdRawFrame(data: Uint8Array): Buffer {
  const parts: Uint8Array[] = [Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x50])];
  for (let at = 0; at < data.length || at === 0; at += 65536) {
    const block = data.subarray(at, at + 65536);
    const last = at + 65536 >= data.length ? 1 : 0;
    const header = (block.length << 3) | last;
    parts.push(Buffer.from([header & 0xff, (header >> 8) & 0xff, (header >> 16) & 0xff]), block);
    if (last) break;
  }
  return Buffer.concat(parts);
}
