/**
 * The encoders of the output formats (src/query/output/), without I/O: CSV quoting and NULLs, NDJSON keys,
 * names told apart, pieces of bounded size, the ClickHouse → Arrow type mapping (time zones, precisions,
 * wide integers, nested types) and values that read back exactly, the Arrow stream a piece per batch, and
 * Parquet written from it.
 */
import { tableFromIPC } from 'apache-arrow';
import { readParquet } from 'parquet-wasm';
import t from 'tap';
import {
  BATCH_ROWS,
  arrowStreamBytes,
  arrowStreamPieces,
  arrowTypeOf,
} from '../../src/query/output/arrow.ts';
import { distinctNames, type BodyPieces, type TabularResult } from '../../src/query/output/formats.ts';
import { parquetBytes } from '../../src/query/output/parquet.ts';
import { csvPieces, ndjsonPieces } from '../../src/query/output/text.ts';

function all(next: BodyPieces): (string | Uint8Array)[] {
  const out: (string | Uint8Array)[] = [];
  for (let p = next(); p !== undefined; p = next()) out.push(p);
  return out;
}

const text = (next: BodyPieces): string => all(next).join('');

t.test('CSV: RFC 4180 quoting, NULL apart from the empty string, nested values as JSON', (t) => {
  const result: TabularResult = {
    columns: ['a', 'b,c', 'a'],
    types: ['String', 'Nullable(String)', 'Array(String)'],
    rows: [
      ['plain', null, ['x', 'y']],
      ['say "hi"', '', []],
      ['two\nlines', 'cr\rhere', ['q"']],
      [1.5, true, { k: 1 }],
    ],
  };
  t.equal(
    text(csvPieces(result)),
    'a,"b,c",a_2\r\n' +
      'plain,,"[""x"",""y""]"\r\n' +
      '"say ""hi""","",[]\r\n' +
      '"two\nlines","cr\rhere","[""q\\""""]"\r\n' +
      '1.5,true,"{""k"":1}"\r\n',
  );
  t.end();
});

t.test('NDJSON: an object a row, keys in column order, repeated names told apart', (t) => {
  const result: TabularResult = {
    columns: ['n', 'n', 'x'],
    types: ['UInt8', 'UInt8', 'Nullable(String)'],
    rows: [
      [1, 2, null],
      [3, 4, 'é\n'],
    ],
  };
  t.equal(text(ndjsonPieces(result)), '{"n":1,"n_2":2,"x":null}\n{"n":3,"n_2":4,"x":"é\\n"}\n');
  t.equal(text(ndjsonPieces({ ...result, rows: [] })), '', 'no rows, no line');
  t.same(distinctNames(['a', 'a', 'a_2', 'a']), ['a', 'a_2', 'a_2_2', 'a_3']);
  t.end();
});

t.test('text comes in pieces of bounded size, the rows whole and in order', (t) => {
  const rows = Array.from({ length: 20_000 }, (_, i) => [i, `row ${i}`]);
  const pieces = all(csvPieces({ columns: ['i', 's'], types: ['UInt32', 'String'], rows })) as string[];
  t.ok(pieces.length > 4, `${pieces.length} pieces`);
  t.ok(
    pieces.every((p) => p.length < 80 * 1024),
    'each piece about 64 KiB at most',
  );
  t.ok(
    pieces.every((p) => p.endsWith('\r\n')),
    'a piece ends at a line',
  );
  const lines = pieces.join('').split('\r\n');
  t.equal(lines.length, 20_002);
  t.equal(lines[20_000], '19999,row 19999');
  t.end();
});

t.test('ClickHouse types map to Arrow types', (t) => {
  const cases: [string, string][] = [
    ['UInt8', 'Uint8'],
    ['Int16', 'Int16'],
    ['Nullable(UInt32)', 'Uint32'],
    ['Int64', 'Int64'],
    ['UInt64', 'Uint64'],
    ['Int128', 'Utf8'],
    ['UInt256', 'Utf8'],
    ['Float32', 'Float32'],
    ['Float64', 'Float64'],
    ['Decimal(18, 4)', 'Float64'],
    ['Bool', 'Bool'],
    ['Date', 'Date32<DAY>'],
    ['Date32', 'Date32<DAY>'],
    ['DateTime', 'Timestamp<SECOND, UTC>'],
    ["DateTime('UTC')", 'Timestamp<SECOND, UTC>'],
    ["DateTime('Europe/Paris')", 'Utf8'],
    ['DateTime64(3)', 'Timestamp<MILLISECOND, UTC>'],
    ["DateTime64(6, 'UTC')", 'Timestamp<MICROSECOND, UTC>'],
    ["DateTime64(9, 'Etc/UTC')", 'Timestamp<NANOSECOND, UTC>'],
    ["DateTime64(6, 'America/New_York')", 'Utf8'],
    ['LowCardinality(Nullable(String))', 'Utf8'],
    ['FixedString(4)', 'Utf8'],
    ['UUID', 'Utf8'],
    ["Enum8('a' = 1, 'b' = 2)", 'Utf8'],
    ['IPv4', 'Utf8'],
    ['Array(Nullable(String))', 'List<Utf8>'],
    ['Array(Array(UInt8))', 'List<List<Uint8>>'],
    ['Tuple(UInt8, String)', 'Utf8'],
    ['Map(String, UInt64)', 'Utf8'],
    ['Nullable(Nothing)', 'Utf8'],
    ['IntervalDay', 'Utf8'],
  ];
  for (const [clickhouse, arrow] of cases) {
    // eslint-disable-next-line @typescript-eslint/no-base-to-string -- Arrow's types name themselves so
    t.equal(String(arrowTypeOf(clickhouse)), arrow, clickhouse);
  }
  t.end();
});

t.test('values read back exactly from Arrow and from Parquet', async (t) => {
  const result: TabularResult = {
    columns: ['big', 'neg', 'ns', 'us', 'before', 'd', 'f', 'list', 'b', 'inf'],
    types: [
      'UInt64',
      'Int64',
      "DateTime64(9, 'UTC')",
      'DateTime64(6)',
      'DateTime64(3)',
      'Date32',
      'Float32',
      'Array(Array(UInt8))',
      'Bool',
      'Float64',
    ],
    rows: [
      [
        '18446744073709551615',
        '-9223372036854775808',
        '2026-11-26 05:00:00.123456789',
        '2026-11-26 05:00:00.000001',
        '1900-01-01 00:00:00.001',
        '1900-01-01',
        0.1,
        [[1, 2], [], [3]],
        true,
        'inf',
      ],
      [null, 5, null, null, null, null, null, null, null, null],
    ],
  };
  for (const [format, bytes] of [
    ['arrow', arrowStreamBytes(result)],
    ['parquet', readParquet(await parquetBytes(result)).intoIPCStream()],
  ] as const) {
    const table = tableFromIPC(bytes);
    const row = (i: number) => table.schema.fields.map((f) => table.getChild(f.name)!.get(i) as unknown);
    const first = row(0);
    t.equal(first[0], 18446744073709551615n, `${format}: UInt64 past 2^53`);
    t.equal(first[1], -9223372036854775808n, `${format}: Int64's least`);
    const ns = table.getChild('ns')!.data[0]!.values as BigInt64Array;
    t.equal(ns[0], 1795669200123456789n, `${format}: nanoseconds`);
    const us = table.getChild('us')!.data[0]!.values as BigInt64Array;
    t.equal(us[0], 1795669200000001n, `${format}: microseconds`);
    t.equal(first[4], Date.UTC(1900, 0, 1) + 1, `${format}: a time before 1970`);
    t.equal(first[5], Date.UTC(1900, 0, 1), `${format}: a day before 1970`);
    t.equal(first[6], Math.fround(0.1), `${format}: Float32`);
    t.same(
      [...(first[7] as Iterable<Iterable<number>>)].map((l) => [...l]),
      [[1, 2], [], [3]],
      `${format}: lists of lists`,
    );
    t.equal(first[8], true);
    t.equal(first[9], Number.POSITIVE_INFINITY, `${format}: ClickHouse's inf`);
    t.same(row(1), [null, 5n, null, null, null, null, null, null, null, null], `${format}: NULLs`);
  }
});

t.test('the Arrow stream: the schema, a piece per batch, the end marker', (t) => {
  const rows = Array.from({ length: 2 * BATCH_ROWS + 5 }, (_, i) => [i]);
  const result: TabularResult = { columns: ['i'], types: ['UInt32'], rows };
  const pieces = all(arrowStreamPieces(result)) as Uint8Array[];
  t.equal(pieces.length, 5, 'schema, three batches, end of stream');
  const table = tableFromIPC(Buffer.concat(pieces));
  t.equal(table.numRows, rows.length);
  t.equal(table.batches.length, 3);
  t.equal(table.getChild('i')!.get(2 * BATCH_ROWS + 4), 2 * BATCH_ROWS + 4);
  const empty = tableFromIPC(arrowStreamBytes({ ...result, rows: [] }));
  t.equal(empty.numRows, 0);
  t.same(
    empty.schema.fields.map((f) => f.name),
    ['i'],
    'no rows: the schema alone',
  );
  t.end();
});
