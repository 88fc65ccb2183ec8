/**
 * The materialization rewrite's refusals (each with a reason that names what to change), the serving modes
 * it picks, and the pure pieces a served run relies on: a value moved to its bucket, text read as a time.
 */
import t from 'tap';
import type { EndpointVersion, VariableType } from '../../src/core/ports.ts';
import { compileVersion } from '../../src/query/compile/version.ts';
import { planMaterialization, servingVariables } from '../../src/query/materialize/rewrite.ts';
import type { SqlServing } from '../../src/query/materialize/serving.ts';
import { bucketStart, compare, nextBucket, parseTime, toJson } from '../../src/query/materialize/values.ts';

function version(query: string, variables: Record<string, VariableType> = {}): EndpointVersion {
  return {
    version: 1,
    query: { kind: 'HogQLQuery', query },
    variables: Object.fromEntries(Object.entries(variables).map(([k, type]) => [k, { type }])),
    isActive: true,
    isMaterialized: true,
    createdAt: '2024-01-01T00:00:00Z',
    createdBy: null,
  };
}

function plan(query: string, variables: Record<string, VariableType> = {}) {
  const v = version(query, variables);
  return planMaterialization(v, compileVersion(v), { now: new Date('2024-06-01T00:00:00Z') });
}

function reason(query: string, variables: Record<string, VariableType> = {}): string {
  const p = plan(query, variables);
  return 'cannot' in p ? p.cannot : '(materializable)';
}

t.test('refusals name what cannot be materialized', (t) => {
  const cases: [string, RegExp][] = [
    [`SELECT count() FROM events WHERE event = {variables.e} OR event = 'x'`, /under OR/],
    [`SELECT count() FROM events WHERE event LIKE {variables.e}`, /LIKE/],
    [`SELECT {variables.e}, count() FROM events`, /WHERE clause of the outer query/],
    [`SELECT event, count() AS c FROM events GROUP BY event HAVING c > {variables.n}`, /WHERE clause/],
    [
      `SELECT event, uniq(person_id) FROM events WHERE timestamp >= {variables.from} GROUP BY event`,
      /'uniq\(person_id\)' cannot be merged across the buckets of a range variable \(only count, countIf, sum, sumIf, min, max and avg can\)/,
    ],
    [
      `SELECT quantile(0.9)(toFloat64OrZero(properties.x)) FROM events WHERE timestamp >= {variables.from}`,
      /cannot be merged across the buckets/,
    ],
    [
      `SELECT count(DISTINCT person_id) FROM events WHERE timestamp >= {variables.from}`,
      /cannot be merged across the buckets/,
    ],
    [
      `SELECT event, count() / 2 AS half FROM events WHERE timestamp >= {variables.from} GROUP BY event`,
      /combines aggregates with other operations/,
    ],
    [
      `SELECT event, count() AS c FROM events WHERE timestamp >= {variables.from} GROUP BY event HAVING c > 1`,
      /HAVING cannot be materialized with a range variable/,
    ],
    [`SELECT count() AS c FROM events WHERE event = {variables.e} HAVING c > 1`, /HAVING without GROUP BY/],
    [`SELECT * FROM events WHERE event = {variables.e}`, /selecting \* .*name its columns/],
    [`SELECT event, count() OVER () FROM events WHERE event = {variables.e}`, /window function \(OVER\)/],
    [
      `SELECT event FROM events WHERE event = {variables.e} ORDER BY timestamp LIMIT 1 BY event`,
      /LIMIT … BY/,
    ],
    [
      `SELECT event, count() FROM events WHERE event = {variables.e} GROUP BY event WITH ROLLUP`,
      /WITH ROLLUP/,
    ],
    [
      `SELECT count() FROM events WHERE timestamp >= {variables.a} AND timestamp = {variables.b}`,
      /compared to variables both with = and with a range/,
    ],
    [
      `SELECT DISTINCT event FROM events WHERE event = {variables.e} ORDER BY timestamp`,
      /With DISTINCT, ORDER BY 'timestamp' must be a selected column/,
    ],
    [
      `SELECT count() AS c FROM events WHERE timestamp >= {variables.from} GROUP BY event ORDER BY uniq(person_id)`,
      /ORDER BY: 'uniq\(person_id\)' cannot be merged/,
    ],
    [
      `SELECT event FROM events WHERE event = {variables.e} LIMIT toUInt8(3)`,
      /LIMIT and OFFSET of a materialized query must be numbers/,
    ],
  ];
  for (const [query, expected] of cases) t.match(reason(query), expected, query);
  t.end();
});

t.test('what is materialized, and how it is served', (t) => {
  const modeOf = (query: string, variables: Record<string, VariableType> = {}) => {
    const p = plan(query, variables);
    if ('cannot' in p) throw new Error(p.cannot);
    return p.serving as SqlServing;
  };
  const eq = modeOf(
    `SELECT event, uniq(person_id) FROM events WHERE properties.$browser = {variables.b} GROUP BY event`,
  );
  t.equal(eq.mode, 'rows', 'equality only: every aggregate, stored rows answered as they are');
  t.same(eq.filters, [{ column: 2, variable: 'b', op: '=', bucket: null }]);

  const range = modeOf(`SELECT count() FROM events WHERE {variables.from} <= timestamp`, {
    from: 'datetime',
  });
  t.equal(range.mode, 'reaggregate');
  t.same(
    range.filters,
    [{ column: 1, variable: 'from', op: '>=', bucket: 'day' }],
    'the variable on the left is flipped',
  );
  t.not(range.emptyMarker, null, 'no GROUP BY: the row over no rows is stored');

  const numbers = modeOf(
    `SELECT count() FROM events WHERE toInt64OrZero(properties.q) > {variables.q} GROUP BY event`,
    {
      q: 'number',
    },
  );
  t.equal(numbers.filters[0]!.bucket, null, 'a number range is kept at its values');

  const rows = modeOf(
    `SELECT event, timestamp FROM events WHERE timestamp >= {variables.from} ORDER BY timestamp LIMIT 10 OFFSET 2`,
  );
  t.equal(rows.mode, 'rows');
  t.equal(rows.filters[0]!.bucket, null, 'rows without aggregates keep the exact time');
  t.same([rows.limit, rows.offset], [10, 2]);
  t.same(JSON.parse(JSON.stringify(rows)), rows, 'plain JSON data');
  t.end();
});

t.test('insight versions materialize; their run variables are checked as a direct run checks them', (t) => {
  const v: EndpointVersion = {
    ...version(''),
    query: {
      kind: 'TrendsQuery',
      series: [{ kind: 'EventsNode', event: 'x' }],
      breakdownFilter: { breakdown: '$browser' },
    },
  };
  const compiled = compileVersion(v);
  const p = planMaterialization(v, compiled, { now: new Date('2024-06-01T00:00:00Z') });
  if ('cannot' in p) throw new Error(p.cannot);
  t.equal(p.serving.kind, 'insight');
  t.same(servingVariables(compiled, { $browser: 'Chrome' }), { $browser: 'Chrome' });
  t.same(servingVariables(compiled, { $browser: '' }), { $browser: null });
  t.throws(() => servingVariables(compiled, { date_to: '2024-01-01' }), {
    code: 'date_variables_unavailable',
  });
  t.throws(() => servingVariables(compiled, { os: 'x' }), { code: 'unknown_variable' });
  const sql = version(`SELECT count() FROM events WHERE event = {variables.e}`);
  t.throws(() => servingVariables(compileVersion(sql), {}), { code: 'missing_variable' });
  t.end();
});

t.test('buckets: starts (weeks from Sunday) and the next one', (t) => {
  const us = parseTime('2024-04-10 13:45:12.5')!;
  const at = (x: number) => new Date(x / 1000).toISOString();
  t.equal(at(bucketStart(us, 'hour')), '2024-04-10T13:00:00.000Z');
  t.equal(at(bucketStart(us, 'day')), '2024-04-10T00:00:00.000Z');
  t.equal(at(bucketStart(us, 'week')), '2024-04-07T00:00:00.000Z');
  t.equal(at(bucketStart(us, 'month')), '2024-04-01T00:00:00.000Z');
  t.equal(at(nextBucket(bucketStart(us, 'month'), 'month')), '2024-05-01T00:00:00.000Z');
  t.equal(
    at(nextBucket(bucketStart(parseTime('2024-12-31')!, 'month'), 'month')),
    '2025-01-01T00:00:00.000Z',
  );
  t.equal(parseTime('2024-04-10T13:45:00+02:00'), parseTime('2024-04-10 11:45:00'));
  t.equal(parseTime('2024-04-10 13:45:00.000001')! - parseTime('2024-04-10 13:45:00')!, 1);
  t.equal(parseTime('not a time'), undefined);
  t.end();
});

t.test('values read back as a direct run answers them, compared as ClickHouse compares', (t) => {
  const ms = Date.UTC(2024, 3, 10, 13, 45, 12) + 0.123; // 123 µs, as Arrow gives a DateTime64(6)
  t.equal(toJson(ms, "DateTime64(6, 'UTC')"), '2024-04-10 13:45:12.000123');
  t.equal(toJson(ms, "DateTime('UTC')"), '2024-04-10 13:45:12');
  t.equal(toJson(Date.UTC(2024, 3, 10), 'Date'), '2024-04-10');
  t.equal(toJson(5n, 'UInt64'), 5);
  t.equal(toJson(2n ** 60n, 'UInt64'), '1152921504606846976');
  t.equal(toJson(Number.NaN, 'Float64'), null);
  t.equal(toJson(Math.fround(0.1), 'Float32'), 0.1);
  t.equal(toJson(null, 'Nullable(String)'), null);
  t.ok(compare('Édge', 'Zebra') > 0, 'strings by their bytes: É after Z');
  t.ok(compare('\u{1F600}', '\uFFFD') > 0, 'by code point, not UTF-16 unit');
  t.ok(compare(2n, 3) < 0);
  t.end();
});
