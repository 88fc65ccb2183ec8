/**
 * The resolver and the ClickHouse printer, without a store: what is refused and where, what a query turns
 * into, and — over the whole dialect corpus — that every store table the printed query reads sits inside the
 * project-confining subquery.
 */
import t from 'tap';
import { capRows, printClickHouse } from '../../src/query/clickhouse/printer.ts';
import { bindVariables } from '../../src/query/clickhouse/variables.ts';
import {
  parseDialect,
  printDialect,
  type Expr,
  type Query,
  type SelectQuery,
  type TableExpr,
} from '../../src/query/dialect/mod.ts';
import { QueryResolveError } from '../../src/query/resolver/errors.ts';
import { functionKind } from '../../src/query/resolver/functions.ts';
import { resolveQuery } from '../../src/query/resolver/resolver.ts';
import { PROJECT_PLACEHOLDER } from '../../src/query/resolver/store-table.ts';
import { loadValidCorpus, SAMPLE_VARIABLES } from '../helpers/dialect-corpus.ts';

function sql(text: string, values: Record<string, unknown> = {}): string {
  const resolved = resolveQuery(parseDialect(text));
  return printClickHouse(resolved, bindVariables(resolved.variables, values), 1).sql.replace(
    / SETTINGS .*$/,
    '',
  );
}

/** The refusal of `text`, as "reason @line:column". */
function refusal(text: string): string {
  try {
    resolveQuery(parseDialect(text));
  } catch (err) {
    if (err instanceof QueryResolveError) return `${err.reason} @${err.line}:${err.column}`;
    throw err;
  }
  return 'accepted';
}

const EVENTS_SOURCE =
  '(SELECT project_id, uuid, event, distinct_id, person_id, timestamp, properties, person_properties, person_mode, $group_0, $group_1, $group_2, $group_3, $group_4, created_at, $session_id, $window_id, elements_chain FROM default.events FINAL PREWHERE project_id = {weir_project:UInt64})';

t.test('a table reference becomes a confined, deduplicated subquery under the same name', (t) => {
  t.equal(sql('SELECT count() FROM events'), `SELECT count() FROM ${EVENTS_SOURCE} AS events LIMIT 50001`);
  t.equal(
    sql('SELECT e.event FROM events AS e LIMIT 5'),
    `SELECT e.event FROM ${EVENTS_SOURCE} AS e LIMIT 5`,
  );
  t.match(
    sql('SELECT id FROM persons'),
    '(SELECT project_id, id, properties, is_identified, created_at FROM default.persons FINAL PREWHERE project_id = {weir_project:UInt64} WHERE is_deleted = 0) AS persons',
  );
  t.match(sql('SELECT group_properties FROM groups'), 'properties AS group_properties');
  t.match(sql('SELECT type FROM ingestion_warnings'), 'FROM default.ingestion_warnings PREWHERE project_id');
  t.notMatch(sql('SELECT type FROM ingestion_warnings'), 'FINAL', 'a MergeTree has no versions to collapse');
  t.end();
});

t.test('properties, person properties and other JSON columns read one key per JSONExtract', (t) => {
  t.match(
    sql('SELECT properties.$browser FROM events'),
    "SELECT JSONExtract(properties, '$browser', 'Nullable(String)')",
  );
  t.match(
    sql("SELECT properties['$browser'] FROM events"),
    "JSONExtract(properties, '$browser', 'Nullable(String)')",
  );
  t.match(
    sql("SELECT e.properties.$set['plan'] FROM events e"),
    "JSONExtract(e.properties, '$set', 'plan', 'Nullable(String)')",
  );
  t.match(
    sql('SELECT properties[{variables.k}] FROM events', { k: 'x' }),
    "JSONExtract(properties, {var_k:String}, 'Nullable(String)')",
  );
  t.match(
    sql('SELECT person.properties.email FROM events'),
    "JSONExtract(person_properties, 'email', 'Nullable(String)')",
  );
  t.match(
    sql('SELECT e.person.properties, person.id FROM events AS e'),
    'SELECT e.person_properties, person_id',
  );
  t.match(
    sql('SELECT p FROM (SELECT properties AS p FROM events) WHERE p.plan = 1'),
    "WHERE ifNull(JSONExtract(p, 'plan', 'Nullable(String)') = '1', 0)",
    'a number compared with a text property is compared as its text',
  );
  t.match(
    sql('SELECT details.reason FROM ingestion_warnings'),
    "JSONExtract(details, 'reason', 'Nullable(String)')",
  );
  t.end();
});

t.test('other rewrites', (t) => {
  t.match(
    sql("SELECT count() FROM events PREWHERE event = 'a' WHERE distinct_id = 'b'"),
    "WHERE event = 'a' AND distinct_id = 'b'",
  );
  t.match(
    sql("SELECT windowFunnel(60)(timestamp, event = 'a') FROM events"),
    "windowFunnel(60)(toDateTime(timestamp), event = 'a')",
    'windowFunnel takes a DateTime',
  );
  t.match(
    sql('SELECT 1 FROM events FINAL'),
    `FROM ${EVENTS_SOURCE} AS events LIMIT`,
    "the caller's FINAL adds nothing",
  );
  t.match(sql('WITH a AS (SELECT event FROM events) SELECT * FROM a FINAL'), 'FROM a LIMIT', 'nor on a CTE');
  t.end();
});

t.test('refusals point at the offending name', (t) => {
  const cases: [string, string][] = [
    [
      'SELECT 1 FROM evnts',
      "unknown table 'evnts'; the tables are events, persons, person_distinct_ids, groups, ingestion_warnings, raw_groups, sessions @1:15",
    ],
    ['SELECT 1 FROM Persons', "unknown table 'Persons'; did you mean 'persons'? @1:15"],
    [
      'SELECT 1 FROM generateRandom()',
      "table functions are not allowed ('generateRandom'): a query reads only the tables events, persons, person_distinct_ids, groups, ingestion_warnings, raw_groups, sessions and numbers(…) @1:15",
    ],
    ['SELECT 1 FROM numbers(1000001)', 'numbers() makes at most 1000000 rows; this asks for 1000001 @1:15'],
    [
      'SELECT 1 FROM numbers(event)',
      'numbers() takes a count, or an offset and a count: whole numbers, or expressions of constants, such as numbers(10), numbers(5, 10) @1:15',
    ],
    [
      'SELECT 1 FROM system.tables',
      '`system.tables` is not reachable: a query reads only the tables events, persons, person_distinct_ids, groups, ingestion_warnings, raw_groups, sessions @1:15',
    ],
    [
      'SELECT\n nope FROM events',
      "unknown column 'nope'; the columns here are project_id, uuid, event, distinct_id, person_id, timestamp, properties, person_properties, person_mode, $group_0, $group_1, $group_2 and 6 more @2:2",
    ],
    ['SELECT Event FROM events', "unknown column 'Event'; did you mean 'event'? @1:8"],
    ['SELECT x', "unknown column 'x' (this SELECT has no FROM clause) @1:8"],
    [
      'SELECT e.nope FROM events e',
      "table events has no column 'nope'; its columns are project_id, uuid, event, distinct_id, person_id, timestamp, properties, person_properties, person_mode, $group_0, $group_1, $group_2 and 6 more; a property is read as e.properties.nope @1:8",
    ],
    [
      'SELECT events.event FROM events AS e',
      "unknown column 'events'; the columns here are project_id, uuid, event, distinct_id, person_id, timestamp, properties, person_properties, person_mode, $group_0, $group_1, $group_2 and 6 more @1:8",
    ],
    ['SELECT event.x FROM events', "'event' is a String, not JSON: it has no field 'x' @1:8"],
    [
      'SELECT person FROM events',
      "'person' is not a column: write person.properties.<key>, person.id, person.created_at or person.is_identified @1:8",
    ],
    [
      'SELECT person.email FROM events',
      "the person of the distinct id has no column 'email'; its columns are id, created_at, properties and is_identified; a property is read as person.properties.email @1:8",
    ],
    [
      'SELECT person.properties.x FROM persons',
      "unknown column 'person'; the columns here are project_id, id, properties, is_identified and created_at @1:8",
    ],
    [
      'SELECT (SELECT count() FROM persons WHERE id = e.person_id) FROM events e',
      "unknown column 'e': a subquery cannot use the columns of the query around it (correlated subqueries are not supported) @1:48",
    ],
    ['SELECT sleep(1)', "function 'sleep' is not allowed: a query cannot pause @1:8"],
    ['SELECT foo(1)', "unknown function 'foo' (or one a query may not call) @1:8"],
    [
      'SELECT lower(event) OVER () FROM events',
      "'lower' is not an aggregate or window function: it takes no OVER @1:8",
    ],
    ['SELECT count() OVER w FROM events', "no window 'w' is defined in this query's WINDOW clause @1:21"],
    [
      'SELECT count(*), sum(*) FROM events',
      "'*' stands only for all columns (SELECT *, SELECT t.*) or in count(*) @1:22",
    ],
    ['SELECT x.* FROM events', "'x'.* names no table of this FROM clause @1:8"],
    [
      'SELECT 1 FROM events JOIN events ON 1',
      "two tables of this FROM are called 'events'; give one of them another alias @1:27",
    ],
    [
      'SELECT 1 FROM events e JOIN persons p USING (nope)',
      "USING 'nope': the column must be in the joined table and in a table before it @1:24",
    ],
    [
      'SELECT count() FROM persons WHERE id IN events',
      'IN takes a list or a subquery: write IN (SELECT … FROM events) @1:41',
    ],
    [
      'SELECT event, count() FROM events GROUP BY event WITH TOTALS',
      'WITH TOTALS is not supported: a result has no place for a totals row; use WITH ROLLUP, or UNION ALL a total @1:1',
    ],
    [
      'WITH a AS (SELECT 1) SELECT * FROM b',
      "unknown table 'b'; the tables are events, persons, person_distinct_ids, groups, ingestion_warnings, raw_groups, sessions @1:36",
    ],
  ];
  for (const [text, expected] of cases) t.equal(refusal(text), expected, text);
  t.end();
});

t.test('names resolve where ClickHouse resolves them', (t) => {
  const accepted = [
    'SELECT toDate(timestamp) AS day, count() AS n FROM events GROUP BY day HAVING n > 1 ORDER BY day',
    'SELECT arrayMap(x -> x + 1, [1]) AS a, arrayFilter((x, i) -> i > 1, a, [1]) FROM events',
    'WITH 5 AS k SELECT (SELECT k), k FROM events',
    'WITH a AS (SELECT person_id FROM events), b AS (SELECT * FROM a) SELECT person_id FROM b',
    'SELECT x FROM (SELECT 1 AS x) AS s WHERE s.x = 1',
    'SELECT t.1, t.2 FROM (SELECT (1, 2) AS t)',
    'SELECT tag FROM events ARRAY JOIN [1, 2] AS tag',
    'SELECT person_id FROM events AS e JOIN person_distinct_ids AS p USING (person_id)',
    'SELECT e.event, p.id FROM events AS e LEFT JOIN persons AS p ON e.person_id = p.id',
    'SELECT count() FROM events WHERE person_id IN (SELECT id FROM persons)',
    'SELECT rank() OVER w FROM events WINDOW w AS (PARTITION BY event ORDER BY timestamp)',
    'SELECT uniqExactIf(person_id, event = 1), sumArray([1]), countIf(1), quantilesIf(0.5)(1, 1) FROM events',
    'SELECT events.event FROM events',
  ];
  for (const text of accepted) t.equal(refusal(text), 'accepted', text);
  t.end();
});

t.test('the allow-list: aggregates with combinators, no side effects', (t) => {
  for (const name of [
    'count',
    'COUNT',
    'countIf',
    'uniqExactIf',
    'sumArray',
    'sumState',
    'uniqMerge',
    'avgForEach',
    'argMaxIf',
    'quantilesTDigestIf',
    'groupArrayResample',
    'sumMapMerge',
    'windowFunnel',
    'retention',
  ])
    t.equal(functionKind(name), 'aggregate', name);
  for (const name of ['row_number', 'lagInFrame', 'ntile']) t.equal(functionKind(name), 'window', name);
  for (const name of [
    'JSONExtractString',
    'toStartOfWeek',
    'arrayMap',
    'toInt64OrNull',
    'toIntervalDay',
    'lower',
    'multiIf',
    'domain',
    'CAST',
  ])
    t.equal(functionKind(name), 'scalar', name);
  for (const name of [
    'sleep',
    'sleepEachRow',
    'file',
    'FILE',
    'fileIf',
    'url',
    's3',
    'remote',
    'input',
    'dictGet',
    'dictGetString',
    'joinGet',
    'getSetting',
    'currentDatabase',
    'currentUser',
    'hostName',
    'version',
    'throwIf',
    'aggThrow',
    'hasColumnInTable',
    'getMacro',
    'generateSerialID',
    'addressToLine',
    'catboostEvaluate',
    'globalIn',
    '_CAST',
    'queryID',
    'neighbor',
  ])
    t.equal(functionKind(name), undefined, name);
  t.end();
});

/** Every store table read (db-qualified) is the FROM of a select whose PREWHERE is the project filter. */
function confinedTables(q: Query): { confined: number; bare: string[] } {
  const out = { confined: 0, bare: [] as string[] };
  const visitQuery = (query: Query): void => {
    if (query.kind !== 'select') return query.queries.forEach(visitQuery);
    visitSelect(query);
  };
  const visitSelect = (s: SelectQuery): void => {
    for (const w of s.with) {
      if (w.kind === 'withQuery') visitQuery(w.query);
      else visitExpr(w.expr);
    }
    if (s.from) {
      for (const table of [
        s.from.table,
        ...s.from.joins.flatMap((j) => (j.kind === 'join' ? [j.table] : [])),
      ]) {
        visitTable(table, s);
      }
    }
    for (const c of s.columns) visitExpr(c.kind === 'alias' ? c.expr : c);
    for (const e of [s.where, s.having, ...(s.groupBy ?? [])]) if (e) visitExpr(e);
  };
  const visitTable = (t: TableExpr, owner: SelectQuery): void => {
    if (t.kind === 'tableSubquery') return visitQuery(t.query);
    if (t.kind === 'table' && t.database !== null) {
      const p = owner.prewhere;
      const ok =
        p?.kind === 'binary' &&
        p.left.kind === 'field' &&
        p.left.chain.join('.') === 'project_id' &&
        p.right.kind === 'placeholder' &&
        p.right.name === PROJECT_PLACEHOLDER &&
        owner.from?.joins.length === 0;
      if (ok) out.confined++;
      else out.bare.push(`${t.database}.${t.name}`);
    }
  };
  const visitExpr = (e: Expr): void => {
    if (e.kind === 'subquery') return visitQuery(e.query);
    for (const v of Object.values(e)) {
      if (Array.isArray(v))
        for (const x of v) if (x && typeof x === 'object' && 'kind' in x) visitExpr(x as Expr);
      if (v && typeof v === 'object' && 'kind' in v) visitExpr(v as Expr);
    }
  };
  visitQuery(q);
  return out;
}

t.test('over the dialect corpus, every table the printed query reads is confined', (t) => {
  const refused = new Set([
    'lifecycle: new vs returning',
    'drop-off between steps',
    'breakdown with TOTALS',
    'GROUP BY WITH CUBE and TOTALS',
  ]);
  let tables = 0;
  for (const q of loadValidCorpus()) {
    if (refused.has(q.name)) {
      t.not(refusal(q.text), 'accepted', `${q.name} is refused`);
      continue;
    }
    const resolved = resolveQuery(parseDialect(q.text));
    const { confined, bare } = confinedTables(resolved.query);
    t.same(bare, [], `${q.name}: no store table outside the confining subquery`);
    const references = (
      q.text.match(/\b(FROM|JOIN)\s+(events|persons|person_distinct_ids|groups|ingestion_warnings)\b/g) ?? []
    ).length;
    t.ok(confined >= Math.min(references, 1), `${q.name}: ${confined} confined reads`);
    tables += confined;
    const values = Object.fromEntries(resolved.variables.map((v) => [v, SAMPLE_VARIABLES[v]]));
    const printed = printClickHouse(resolved, bindVariables(resolved.variables, values), 1);
    t.equal(
      (printed.sql.match(/FROM default\.\w+/g) ?? []).length,
      (printed.sql.match(/PREWHERE project_id = \{weir_project:UInt64\}/g) ?? []).length,
      `${q.name}: as many project filters as store tables in the text`,
    );
  }
  t.ok(tables > 200, `${tables} table reads checked`);
  t.end();
});

t.test('capRows asks for one row over the limit, keeps a smaller LIMIT, caps an expression', (t) => {
  const limitOf = (q: Query): string => `${printDialect(capRows(q, 101))} SETTINGS`;
  t.match(limitOf(parseDialect('SELECT 1')), 'SELECT 1 LIMIT 101 SETTINGS');
  t.match(limitOf(parseDialect('SELECT 1 LIMIT 5 OFFSET 2')), 'LIMIT 5 OFFSET 2 SETTINGS');
  t.match(limitOf(parseDialect('SELECT 1 LIMIT 500')), 'LIMIT 101 SETTINGS');
  t.match(limitOf(parseDialect('SELECT 1 LIMIT 2 + 3')), 'LIMIT least(2 + 3, 101) SETTINGS');
  t.match(
    limitOf(parseDialect('SELECT 1 UNION ALL SELECT 2 LIMIT 3')),
    'SELECT 1 LIMIT 101 UNION ALL SELECT 2 LIMIT 3',
  );
  t.end();
});

t.test('a comparison with a value that may be NULL is made as HogQL makes it', (t) => {
  const where = (cond: string): string =>
    / WHERE (.*) LIMIT/.exec(sql(`SELECT 1 FROM events WHERE ${cond}`))![1]!;
  const plan = "JSONExtract(properties, 'plan', 'Nullable(String)')";
  const tier = "JSONExtract(properties, 'tier', 'Nullable(String)')";
  t.equal(where("properties.plan = 'pro'"), `ifNull(${plan} = 'pro', 0)`);
  t.equal(where("properties.plan != 'pro'"), `ifNull(${plan} != 'pro', 1)`);
  t.equal(where("properties.plan NOT LIKE 'p%'"), `ifNull(${plan} NOT LIKE 'p%', 1)`);
  t.equal(where('properties.plan < 3'), `ifNull(${plan} < '3', 0)`);
  t.equal(where('properties.plan = NULL'), `isNull(${plan})`);
  t.equal(where('NULL != properties.plan'), `isNotNull(${plan})`);
  t.equal(
    where('properties.plan = properties.tier'),
    `ifNull(${plan} = ${tier}, isNull(${plan}) AND isNull(${tier}))`,
  );
  t.equal(
    where('properties.plan != properties.tier'),
    `ifNull(${plan} != ${tier}, isNotNull(${plan}) OR isNotNull(${tier}))`,
  );
  t.equal(where('properties.plan BETWEEN 1 AND 2'), `ifNull(${plan} BETWEEN 1 AND 2, 0)`);
  // A join's keys stay plain equalities: ClickHouse finds join keys only in `a = b` terms.
  t.match(
    sql('SELECT 1 FROM events e JOIN groups g ON e.properties.company = g.properties.name'),
    "ON JSONExtract(e.properties, 'company', 'Nullable(String)') = JSONExtract(g.properties, 'name', 'Nullable(String)') LIMIT",
  );
  // Columns that are never NULL keep the plain comparison, which the primary index reads.
  t.equal(where("event = 'a' AND timestamp >= '2024-01-01'"), "event = 'a' AND timestamp >= '2024-01-01'");
  t.end();
});

t.test('a text property compared with a number literal compares with the number’s text', (t) => {
  const where = (cond: string): string =>
    / WHERE (.*) LIMIT/.exec(sql(`SELECT 1 FROM events WHERE ${cond}`))![1]!;
  t.equal(
    where('properties.code = 10'),
    "ifNull(JSONExtract(properties, 'code', 'Nullable(String)') = '10', 0)",
  );
  t.equal(
    where('10 = properties.code'),
    "ifNull('10' = JSONExtract(properties, 'code', 'Nullable(String)'), 0)",
  );
  t.match(where('properties.code < -1.50'), "JSONExtract(properties, 'code', 'Nullable(String)') < '-1.5'");
  t.match(where('properties.code >= 1e3'), ">= '1000'");
  t.match(
    where('properties.code = 12345678901234567890'),
    "= '12345678901234567890'",
    'digits kept as written',
  );
  t.match(where("properties.code = '10'"), "= '10'");
  t.match(
    sql('SELECT properties.code + 1 FROM events'),
    "'Nullable(String)') + 1",
    'arithmetic is left alone',
  );
  t.match(sql('SELECT 1 FROM events WHERE event = 1'), 'event = 1', 'a column keeps its own type');
  t.end();
});

t.test('a column alias may share a table alias’s name: the table is printed under another', (t) => {
  const printed = (q: string): string => sql(q).replace(/\(SELECT project_id[^)]*\)/g, '(events)');
  t.equal(
    printed("SELECT event AS ee, ee, ee AS e, e.timestamp FROM events e WHERE e.event = 'test'"),
    "SELECT event AS ee, ee, ee AS e, e__table.timestamp FROM (events) AS e__table WHERE e__table.event = 'test' LIMIT 50001",
  );
  t.match(
    printed('SELECT 1 AS e, e.* FROM events e'),
    'SELECT 1 AS e, e__table.* FROM (events) AS e__table',
    'a qualified star follows the table',
  );
  t.match(
    printed('SELECT 1 AS e, e__table.event FROM events e__table JOIN events e ON e.uuid = e__table.uuid'),
    'AS e__table2 ON e__table2.uuid = e__table.uuid',
    'the new name is one no other table has',
  );
  t.match(
    printed('SELECT event AS e FROM events e WHERE e.uuid IN (SELECT e.uuid FROM events e)'),
    'IN (SELECT e.uuid FROM (events) AS e)',
    'a nested query keeps its own tables',
  );
  t.end();
});

t.test('* over a subquery that repeats a name gives the name once, as PostHog does', (t) => {
  const head = (q: string): string => /^SELECT (.*?) FROM/.exec(sql(q))![1]!;
  t.equal(head('SELECT * FROM (SELECT timestamp, timestamp FROM events)'), 'timestamp');
  t.equal(head('SELECT * FROM (SELECT properties.$browser, properties.$browser FROM events)'), '$browser');
  t.match(
    sql('WITH x AS (SELECT event, event FROM events) SELECT * FROM x'),
    ') SELECT x.event FROM x LIMIT',
  );
  t.equal(head('SELECT * FROM (SELECT event, timestamp FROM events)'), '*', 'without a repeat, * stays');
  t.equal(
    resolveQuery(parseDialect('SELECT * FROM (SELECT event, event, timestamp FROM events)')).columns.join(),
    'event,timestamp',
  );
  t.end();
});
