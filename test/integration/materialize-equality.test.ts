/**
 * Issue 25's equality tests: for a corpus of materializable SQL endpoints on a fixed dataset in real chDB,
 * the materialized answer (the engine's Parquet, read into Arrow, served by executeServing) equals the
 * direct answer for many variable values — equality values present and absent, range bounds on bucket
 * boundaries and off them, empty results, pages. A range bound off a boundary gives the direct answer for
 * the bound moved to its bucket (SPEC §4, serving.ts): `>=` and `<` to the bucket's start, `<=` and `>` to
 * its last instant.
 */
import t, { type Test } from 'tap';
import type { MaterializationBucket, VariableType } from '../../src/core/ports.ts';
import type { Page } from '../../src/query/endpoints/pagination.ts';
import type { SqlServing } from '../../src/query/materialize/serving.ts';
import { materializationSql } from '../../src/query/materialize/rewrite.ts';
import { servingHogql } from '../../src/query/materialize/serving-hogql.ts';
import { bucketStart, nextBucket, parseTime } from '../../src/query/materialize/values.ts';
import { insertDataset } from '../helpers/materialize-dataset.ts';
import {
  directRun,
  materialize,
  materializeStore,
  sameAnswer,
  servedRun,
  servingVariables,
  sqlVersion,
  type Materialized,
} from '../helpers/materialize.ts';

const { store, engine } = await materializeStore(t);
await insertDataset(store);
await engine.queryAsync('CREATE DATABASE IF NOT EXISTS materialized', { format: 'CSV' });

/**
 * `debug.hogql` of served runs, run by the engine over the stored table (loaded as
 * `materialized.<name>_v1`): it must answer the served rows (in any order when the query has none).
 */
async function checkHogql(
  t: Test,
  m: Materialized,
  name: string,
  runs: readonly Record<string, unknown>[],
): Promise<void> {
  const { sql, params } = materializationSql(m.plan, 1);
  await engine.queryBindAsync(`CREATE TABLE materialized.${name}_v1 ENGINE = Memory AS ${sql}`, params, {
    format: 'CSV',
  });
  const ordered = (m.serving as SqlServing).order.length > 0 || m.serving.kind === 'insight';
  for (const variables of runs) {
    const served = servedRun(m, variables);
    const text = servingHogql(m.serving, name, 1, servingVariables(m.compiled, variables));
    const result = await engine.queryAsync(`${text} SETTINGS output_format_json_quote_64bit_integers = 0`, {
      format: 'JSONCompactEachRow',
    });
    const rows = result
      .text()
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as unknown[]);
    const sort = (r: unknown[][]): unknown[][] =>
      ordered ? r : [...r].sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
    const same = sameAnswer({ ...served, rows: sort(served.rows) }, { ...served, rows: sort(rows) });
    t.ok(same, `hogql answers the served rows: ${text}`);
    if (!same) t.same(rows, served.rows);
  }
}

interface Case {
  readonly name: string;
  readonly query: string;
  readonly variables?: Record<string, VariableType>;
  readonly bucket?: MaterializationBucket;
  /** Values of each variable; every combination runs. */
  readonly values: Record<string, readonly unknown[]>;
  readonly pages?: readonly Page[];
  /** The serving mode the rewrite must choose. */
  readonly mode: SqlServing['mode'];
}

const BROWSERS = ['Chrome', 'Safari', 'Édge', 'Opera', ''];
const TIMES = [
  '2024-04-01 00:00:00',
  '2024-04-07 00:00:00',
  '2024-04-10 13:00:00',
  '2024-04-10 13:30:00',
  '2024-04-10 00:00:01',
  '2024-05-31 23:59:59',
  '2023-01-01 00:00:00',
];
const DATES = ['2024-04-01', '2024-04-07', '2024-04-10', '2024-05-15', '2025-01-01'];

const CASES: Case[] = [
  {
    name: 'equality on a property, grouped',
    query: `SELECT event, count() AS c FROM events WHERE properties.$browser = {variables.browser} GROUP BY event ORDER BY c DESC, event`,
    values: { browser: BROWSERS },
    mode: 'rows',
  },
  {
    name: 'equality, aggregates that do not merge (rows answered as stored)',
    query: `SELECT event, uniq(person_id) AS people, quantile(0.5)(toFloat64OrZero(properties.amount)) AS median FROM events WHERE properties.$browser = {variables.browser} GROUP BY event ORDER BY event`,
    values: { browser: BROWSERS },
    mode: 'rows',
  },
  {
    name: 'equality, no GROUP BY: the row over no rows when the value is absent',
    query: `SELECT count() AS n, sum(toFloat64OrZero(properties.amount)) AS total, avg(toFloat64OrZero(properties.amount)) AS mean, min(timestamp) AS first FROM events WHERE distinct_id = {variables.who}`,
    values: { who: ['user1', 'user7', 'edge', 'nobody'] },
    mode: 'rows',
  },
  {
    name: 'a datetime range, no GROUP BY (merged across day buckets)',
    query: `SELECT count() AS n, sum(toFloat64OrZero(properties.amount)) AS total, avg(toFloat64OrZero(properties.amount)) AS mean, min(timestamp) AS first, max(timestamp) AS last FROM events WHERE timestamp >= {variables.from} AND timestamp < {variables.to}`,
    variables: { from: 'datetime', to: 'datetime' },
    values: {
      from: TIMES.slice(0, 5),
      to: ['2024-04-10 00:00:00', '2024-04-30 12:00:00', '2024-03-01 00:00:00'],
    },
    mode: 'reaggregate',
  },
  {
    name: 'equality and an inclusive range, grouped by day',
    query: `SELECT toDate(timestamp) AS day, count() AS c, countIf(properties.$browser = 'Chrome') AS chrome FROM events WHERE event = {variables.event} AND timestamp >= {variables.from} AND timestamp <= {variables.to} GROUP BY day ORDER BY day`,
    variables: { from: 'datetime', to: 'datetime' },
    values: {
      event: ['purchase', '$pageview', 'nothing'],
      from: ['2024-04-01 00:00:00', '2024-04-10 13:30:00'],
      to: ['2024-04-10 00:00:00', '2024-04-20 06:00:00'],
    },
    mode: 'reaggregate',
  },
  {
    name: 'week buckets, a variable on the left, an unaliased aggregate',
    query: `SELECT event, count(), sumIf(toInt64OrZero(properties.qty), event = 'purchase') AS qty FROM events WHERE {variables.from} <= timestamp AND {variables.to} > timestamp GROUP BY event ORDER BY event`,
    variables: { from: 'datetime', to: 'datetime' },
    bucket: 'week',
    values: { from: TIMES.slice(0, 4), to: ['2024-05-05 00:00:00', '2024-05-08 10:00:00'] },
    mode: 'reaggregate',
  },
  {
    name: 'month buckets with a date variable',
    query: `SELECT event, count() AS c, min(timestamp) AS first, max(toFloat64OrZero(properties.amount)) AS top FROM events WHERE toDate(timestamp) >= {variables.from} GROUP BY event ORDER BY event`,
    variables: { from: 'date' },
    bucket: 'month',
    values: { from: DATES },
    mode: 'reaggregate',
  },
  {
    name: 'hour buckets; a GROUP BY key not selected; ORDER BY an aggregate not selected; LIMIT',
    query: `SELECT count() AS c FROM events WHERE timestamp > {variables.from} GROUP BY distinct_id ORDER BY max(timestamp) DESC, c DESC LIMIT 5`,
    variables: { from: 'datetime' },
    bucket: 'hour',
    values: { from: ['2024-05-30 00:00:00', '2024-05-31 10:15:00', '2024-06-02 00:00:00'] },
    mode: 'reaggregate',
  },
  {
    name: 'a number range (kept at exact values)',
    query: `SELECT event, count() AS c, avg(toInt64OrZero(properties.qty)) AS mean FROM events WHERE toInt64OrZero(properties.qty) >= {variables.min_qty} GROUP BY event ORDER BY event`,
    variables: { min_qty: 'number' },
    values: { min_qty: [0, 1, 3, 5, 6] },
    mode: 'reaggregate',
  },
  {
    name: 'rows, no aggregate: a range kept exact, ORDER BY and LIMIT, pages',
    query: `SELECT distinct_id, event, timestamp FROM events WHERE distinct_id = {variables.who} AND timestamp >= {variables.from} ORDER BY timestamp, event LIMIT 12`,
    variables: { from: 'datetime' },
    values: {
      who: ['user3', 'edge', 'nobody'],
      from: ['2024-04-10 13:00:00', '2024-04-10 13:00:01', '2024-05-20 08:00:00'],
    },
    pages: [{}, { limit: 5 }, { limit: 5, offset: 5 }, { limit: 5, offset: 10 }, { offset: 11 }],
    mode: 'rows',
  },
  {
    name: 'DISTINCT over a range',
    query: `SELECT DISTINCT event FROM events WHERE timestamp >= {variables.from} ORDER BY event`,
    variables: { from: 'datetime' },
    values: { from: ['2024-03-01 00:00:00', '2024-05-31 20:00:00', '2024-07-01 00:00:00'] },
    mode: 'rows',
  },
  {
    name: 'no variables: the query as it is, paged',
    query: `SELECT event, count() AS c FROM events GROUP BY event ORDER BY c DESC, event LIMIT 4`,
    values: {},
    pages: [{}, { limit: 2 }, { limit: 2, offset: 2 }, { limit: 3, offset: 3 }],
    mode: 'rows',
  },
];

/** The run's values moved to their buckets as serving applies them: what a direct run must be given. */
function moved(
  m: Materialized,
  variables: Record<string, unknown>,
  declared: Record<string, VariableType>,
): Record<string, unknown> {
  const out = { ...variables };
  const serving = m.serving as SqlServing;
  for (const f of serving.filters) {
    if (f.bucket === null) continue;
    const value = variables[f.variable] as string;
    const start = bucketStart(parseTime(value)!, f.bucket);
    const at = f.op === '>=' || f.op === '<' ? start : nextBucket(start, f.bucket) - 1;
    const iso = new Date(Math.floor(at / 1000)).toISOString();
    out[f.variable] =
      declared[f.variable] === 'date'
        ? iso.slice(0, 10)
        : `${iso.slice(0, 10)} ${iso.slice(11, 19)}.${String(at % 1_000_000).padStart(6, '0')}`;
  }
  return out;
}

function combinations(values: Record<string, readonly unknown[]>): Record<string, unknown>[] {
  let out: Record<string, unknown>[] = [{}];
  for (const [name, list] of Object.entries(values))
    out = out.flatMap((o) => list.map((v) => ({ ...o, [name]: v })));
  return out;
}

for (const c of CASES) {
  t.test(c.name, async (t) => {
    const version = sqlVersion(c.query, c.variables);
    const m = await materialize(store, engine, version, { bucket: c.bucket });
    t.equal((m.serving as SqlServing).mode, c.mode, 'serving mode');
    let runs = 0;
    let nonEmpty = 0;
    let empty = 0;
    for (const variables of combinations(c.values)) {
      for (const page of c.pages ?? [{}]) {
        const served = servedRun(m, variables, page);
        const direct = await directRun(store, version, moved(m, variables, c.variables ?? {}), { page });
        runs++;
        if (direct.rows.length === 0) empty++;
        else nonEmpty++;
        if (!sameAnswer(served, direct)) {
          t.same(served, direct, `${JSON.stringify(variables)} ${JSON.stringify(page)}`);
          return;
        }
      }
    }
    t.ok(nonEmpty > 0, `${runs} runs equal the direct answer (${nonEmpty} with rows, ${empty} empty)`);
    await checkHogql(t, m, `case_${CASES.indexOf(c)}`, combinations(c.values).slice(0, 6));
  });
}
