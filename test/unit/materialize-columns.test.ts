/**
 * A held table's decoded columns (columns.ts) answer, row by row, what Arrow's `Vector.get` answers through
 * `comparable` and `toJson` — over the engine's own Parquet, in several batches, with NULLs, 64-bit integers
 * past 2^53, times before 1970 and in every unit, -0, NaN and non-Latin-1 strings — and what does not fit
 * the budget, or cannot be read exactly, is left to Arrow.
 */
import { tableFromIPC, type Table } from 'apache-arrow';
import { Session } from 'chdb';
import { readParquet } from 'parquet-wasm';
import t from 'tap';
import { columnReader, decodeTable } from '../../src/query/materialize/columns.ts';
import { comparable, kindOf, toJson } from '../../src/query/materialize/values.ts';

const engine = new Session();
t.teardown(() => engine.close());

const COLUMNS: readonly (readonly [string, string])[] = [
  ['s', `if(number % 4 = 0, NULL, ['a', 'Édge', '日本', ''][1 + number % 7 % 4])`],
  ['i8', `toInt8(number) - 5`],
  ['u64', `if(number % 5 = 0, NULL, number * 1000000007)`],
  ['i64big', `toInt64(9007199254740993) - number`],
  ['f32', `toFloat32(number / 3)`],
  ['f64', `[-0., nan, 1.5, -2.25, inf][1 + number % 5]`],
  ['d', `toDate('1969-12-30') + number`],
  ['dt', `toDateTime('2026-01-01 00:00:00', 'UTC') + number * 3601`],
  ['dt3', `toDateTime64('1969-12-31 23:59:59.123', 3, 'UTC') + toIntervalMillisecond(number * 7)`],
  ['dt6', `toDateTime64('1969-12-31 23:59:59.999999', 6, 'UTC') + toIntervalMicrosecond(number * 333)`],
  ['dt9', `toDateTime64('2026-01-01 00:00:00.123456789', 9, 'UTC') + toIntervalNanosecond(number)`],
  ['u', `generateUUIDv4(number)`],
];

async function table(): Promise<{ table: Table; types: string[] }> {
  const select = COLUMNS.map(([name, expr]) => `${expr} AS ${name}`).join(', ');
  const sql = `SELECT ${select} FROM numbers(23)`;
  const bytes = (await engine.queryAsync(sql, { format: 'Parquet' })).bytes();
  const described = await engine.queryAsync(`DESCRIBE (${sql})`, { format: 'JSONEachRow' });
  const types = described
    .text()
    .trim()
    .split('\n')
    .map((line) => (JSON.parse(line) as { type: string }).type);
  // Batches of 5 rows: a read must find its row's batch.
  return { table: tableFromIPC(readParquet(bytes, { batchSize: 5 }).intoIPCStream()), types };
}

t.test('decoded columns read as Arrow reads, through comparable and toJson', async (t) => {
  const { table: tbl, types } = await table();
  t.ok(tbl.batches.length > 1, 'several batches');
  const decoded = decodeTable(tbl, Infinity);
  const names = COLUMNS.map(([name]) => name);
  const form = (name: string): string | null => decoded.columns[names.indexOf(name)]?.form ?? null;
  t.equal(form('s'), 'strings');
  for (const name of ['i8', 'u64', 'f32', 'f64', 'd', 'dt', 'dt3', 'dt6'])
    t.equal(form(name), 'numbers', name);
  // Past 2^53: read from Arrow, as bigints, exactly. (Nanoseconds since 1970 are past it too, but what
  // Arrow makes of them, milliseconds, may come out the same: dt9 is checked row by row, in either form.)
  t.equal(form('i64big'), null);
  t.equal(form('u'), null);
  for (let i = 0; i < tbl.numCols; i++) {
    const vector = tbl.getChildAt(i)!;
    const type = types[i]!;
    const reader = columnReader(() => vector, decoded.columns[i] ?? null, type);
    for (let row = 0; row < tbl.numRows; row++) {
      const v: unknown = vector.get(row);
      const raw = typeof v === 'bigint' && decoded.columns[i] ? Number(v) : v;
      if (typeof raw === 'object' && raw !== null) t.same(reader.raw(row), raw, `${names[i]} raw ${row}`);
      else t.ok(Object.is(reader.raw(row), raw ?? null), `${names[i]} raw ${row}`);
      t.same(reader.cmp(row), comparable(v, kindOf(type), type), `${names[i]} cmp ${row}`);
      t.same(reader.json(row), toJson(v, type), `${names[i]} json ${row}`);
    }
  }
});

t.test('the equality index keeps each string rows in row order', async (t) => {
  const { table: tbl } = await table();
  const s = decodeTable(tbl, Infinity).columns[0]!;
  if (s.form !== 'strings' || !s.rows || !s.starts) throw new Error('no index');
  const vector = tbl.getChildAt(0)!;
  for (const value of ['a', 'Édge', '日本', '', 'absent']) {
    const code = s.lookup.get(value) ?? 0;
    const expected = [...Array(tbl.numRows).keys()].filter((row) => vector.get(row) === value);
    const rows = code === 0 ? [] : [...s.rows.subarray(s.starts[code], s.starts[code + 1])];
    t.same(rows, expected, value);
  }
});

t.test('strings that do not fit the budget are left to Arrow; numbers cost nothing', async (t) => {
  const { table: tbl } = await table();
  const decoded = decodeTable(tbl.slice(0), 0);
  t.equal(decoded.bytes, 0);
  t.equal(decoded.columns[0], null);
  t.equal(decoded.columns[1]?.form, 'numbers');
});
