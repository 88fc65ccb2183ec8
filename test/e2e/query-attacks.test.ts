/**
 * The attack corpus of issue 4: queries that try to leave the caller's project or the allowed surface. Each
 * must be refused (a 400 naming the problem) or confined (a 200 whose answer holds nothing of project 2).
 * Project 2's rows carry the marker SECRET in every text column; before the corpus runs, project 2's own
 * queries show the marker is there to be found.
 */
import t from 'tap';
import { createProject, queryApi } from '../helpers/query-api.ts';
import { SECRET, seedDataset } from '../helpers/query-dataset.ts';
import { startTestWeir } from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());
await createProject(w, 'Victim');
await createProject(w, 'Bystander');
await seedDataset(w.weir.store, [1, 2, 3]);

// Rows of two projects side by side in one part and one granule: project 1's values are numbers, project 2's
// are not. A query of project 1 that converts them must never see project 2's (nor fail on them).
const at = '2026-03-01 00:00:00.000';
const numbered = (project: number, i: number, n: string): Record<string, unknown> => ({
  project_id: project,
  uuid: `00000000-0000-4000-a000-${(project * 100 + i).toString(16).padStart(12, '0')}`,
  event: 'numbered',
  distinct_id: 'n',
  person_id: '00000000-0000-4000-a000-000000000000',
  timestamp: at,
  properties: JSON.stringify({ n }),
  person_properties: JSON.stringify({ n }),
  person_mode: 'full',
  created_at: at,
});
await w.weir.store.insert('events', [
  numbered(1, 1, '5'),
  numbered(1, 2, '7'),
  numbered(2, 1, `${SECRET}-not-a-number`),
  numbered(2, 2, `${SECRET}-not-a-number`),
  numbered(3, 1, 'also-not-a-number'),
]);
await w.weir.store.insert('ingestion_warnings', [
  { project_id: 1, type: 'numbered', source: 's', details: '{"n":"4"}', timestamp: at },
  { project_id: 2, type: 'numbered', source: 's', details: `{"n":"${SECRET}"}`, timestamp: at },
]);

t.test("project 2's data is there to be found, by project 2", async (t) => {
  const res = await queryApi(
    w,
    "SELECT event, properties.secret FROM events WHERE event LIKE '$pageview%' LIMIT 1",
    {
      project: 2,
    },
  );
  t.equal(res.status, 200);
  t.match(res.text, SECRET);
});

interface Attack {
  readonly sql: string;
  readonly variables?: Record<string, unknown>;
  /** refused: a 400 with this code; confined: a 200 with nothing of project 2 in it. */
  readonly expect: 'refused' | 'confined';
  readonly code?: string | RegExp;
  /** What the confined answer must be, when it is known. */
  readonly results?: unknown[][];
}

const P1_EVENTS = 'SELECT count() FROM events';
const deep = (n: number): string => `SELECT ${'('.repeat(n)}1${')'.repeat(n)}`;
const nestedSubqueries = (n: number): string =>
  `${'SELECT * FROM ('.repeat(n)}SELECT event FROM events${') AS s'.repeat(n)} LIMIT 1`;
const inList = (n: number): string =>
  `SELECT count() FROM events WHERE distinct_id IN (${Array.from({ length: n }, (_, i) => `'user-${i}'`).join(', ')})`;

const ATTACKS: Record<string, Attack> = {
  // Table functions and other tables
  // numbers() is the one table function of the dialect (HogQL has it): it reads no project, and is bounded.
  'table function numbers': {
    sql: 'SELECT count(), sum(number) FROM numbers(10)',
    expect: 'confined',
    results: [[10, 45]],
  },
  'numbers beyond its bound': { sql: 'SELECT * FROM numbers(1000000000000)', expect: 'refused' },
  'numbers of a computed count': {
    sql: 'SELECT * FROM numbers((SELECT count() FROM events) * 1000000)',
    expect: 'refused',
  },
  'table function file': { sql: "SELECT * FROM file('/etc/passwd', 'LineAsString')", expect: 'refused' },
  'table function url': {
    sql: "SELECT * FROM url('http://127.0.0.1:1/', 'CSV', 'x String')",
    expect: 'refused',
  },
  'table function s3': { sql: "SELECT * FROM s3('http://127.0.0.1:1/b/k.csv')", expect: 'refused' },
  'table function remote': { sql: "SELECT * FROM remote('127.0.0.1', default.events)", expect: 'refused' },
  'table function input': { sql: "SELECT * FROM input('x String')", expect: 'refused' },
  'table function in a join': {
    sql: 'SELECT * FROM events AS e JOIN generateRandom() AS n ON 1 = 1',
    expect: 'refused',
  },
  'numbers in a join': {
    sql: 'SELECT count() FROM events AS e JOIN numbers(10) AS n ON 1 = 1',
    expect: 'confined',
  },
  'table function in a subquery': {
    sql: 'SELECT count() FROM (SELECT * FROM generateRandom())',
    expect: 'refused',
  },
  'system.tables': { sql: 'SELECT name FROM system.tables', expect: 'refused' },
  'system.one in a comma join': { sql: 'SELECT * FROM events, system.one', expect: 'refused' },
  'the store table by its database': { sql: 'SELECT * FROM default.events', expect: 'refused' },
  information_schema: { sql: 'SELECT * FROM information_schema.tables', expect: 'refused' },
  'a quoted dotted name': { sql: 'SELECT * FROM `system.tables`', expect: 'refused' },
  'quoted database and table': { sql: 'SELECT * FROM `system`.`tables`', expect: 'refused' },
  'a store table Weir does not serve': { sql: 'SELECT * FROM group_type_mapping', expect: 'refused' },
  'the migrations table': { sql: 'SELECT * FROM weir_migrations', expect: 'refused' },
  'IN with a table name': { sql: 'SELECT count() FROM persons WHERE id IN events', expect: 'refused' },

  // Another project's id
  'project_id in WHERE': { sql: `${P1_EVENTS} WHERE project_id = 2`, expect: 'confined', results: [[0]] },
  'project_id OR true': {
    sql: "SELECT count() FROM events WHERE (project_id = 2 OR 1 = 1) AND event LIKE '%SECRET%'",
    expect: 'confined',
    results: [[0]],
  },
  'project_id in a JOIN': {
    sql: 'SELECT e.event, p.properties FROM events AS e JOIN persons AS p ON p.project_id = 2 LIMIT 100',
    expect: 'confined',
  },
  'project_id in a subquery': {
    sql: 'SELECT * FROM (SELECT event, properties FROM events WHERE project_id = 2) LIMIT 100',
    expect: 'confined',
    results: [],
  },
  'project_id in a UNION': {
    sql: 'SELECT event FROM events WHERE 0 UNION ALL SELECT event FROM events WHERE project_id != 1',
    expect: 'confined',
    results: [],
  },
  'project_id in a CTE': {
    sql: 'WITH theirs AS (SELECT * FROM events WHERE project_id = 2) SELECT count() FROM theirs',
    expect: 'confined',
    results: [[0]],
  },
  'a CTE named like a table': {
    sql: 'WITH events AS (SELECT * FROM persons WHERE project_id = 2) SELECT count() FROM events',
    expect: 'confined',
    results: [[0]],
  },
  'a WITH value named like a table': {
    sql: 'WITH (SELECT 2) AS events SELECT count() FROM events',
    expect: 'confined',
  },
  'project_id in an IN subquery': {
    sql: 'SELECT count() FROM events WHERE person_id IN (SELECT id FROM persons WHERE project_id = 2)',
    expect: 'confined',
    results: [[0]],
  },
  'a scalar subquery': {
    sql: 'SELECT (SELECT max(properties) FROM events WHERE project_id = 2) AS x',
    expect: 'confined',
    results: [['']],
  },
  'every table, any project': {
    sql: `SELECT
      (SELECT groupArray(properties) FROM events WHERE properties LIKE '%SECRET%'),
      (SELECT groupArray(properties) FROM persons WHERE properties LIKE '%SECRET%'),
      (SELECT groupArray(distinct_id) FROM person_distinct_ids WHERE distinct_id LIKE '%SECRET%'),
      (SELECT groupArray(group_key) FROM groups WHERE group_key LIKE '%SECRET%'),
      (SELECT groupArray(type) FROM ingestion_warnings WHERE type LIKE '%SECRET%')`,
    expect: 'confined',
    results: [[[], [], [], [], []]],
  },
  'FINAL written by the caller': {
    sql: "SELECT count() FROM events FINAL WHERE event LIKE '%SECRET%'",
    expect: 'confined',
    results: [[0]],
  },

  // Comments and look-alikes
  'a line comment hiding the rest': {
    sql: `${P1_EVENTS} -- WHERE project_id = 1\nWHERE event LIKE '%SECRET%'`,
    expect: 'confined',
    results: [[0]],
  },
  'a block comment around a union': {
    sql: 'SELECT event FROM events /* ) UNION ALL SELECT event FROM default.events -- */ WHERE project_id = 2',
    expect: 'confined',
    results: [],
  },
  'a MySQL-style executable comment': {
    sql: 'SELECT 1 /*!50000 UNION ALL SELECT name FROM system.tables */',
    expect: 'confined',
    results: [[1]],
  },
  'an unterminated comment': { sql: 'SELECT 1 /* FROM system.tables', expect: 'refused' },
  'a hash comment': { sql: `${P1_EVENTS} # WHERE project_id = 1`, expect: 'confined' },
  'Cyrillic s in system': { sql: 'SELECT * FROM \u0455ystem.tables', expect: 'refused' },
  'Cyrillic e in events, quoted': { sql: 'SELECT * FROM `\u0435vents`', expect: 'refused' },
  'fullwidth equals': { sql: `${P1_EVENTS} WHERE project_id \uFF1D 2`, expect: 'refused' },
  'fullwidth letters': {
    sql: 'SELECT * FROM \uFF53\uFF59\uFF53\uFF54\uFF45\uFF4D.tables',
    expect: 'refused',
  },
  'a zero-width space inside a name': { sql: 'SELECT * FROM sys\u200Btem.tables', expect: 'refused' },
  'a NUL byte': { sql: `${P1_EVENTS}\u0000 UNION ALL SELECT 1`, expect: 'refused' },

  // Clauses the caller may not set
  SETTINGS: { sql: 'SELECT 1 SETTINGS readonly = 0', expect: 'refused' },
  'SETTINGS after a subquery': {
    sql: 'SELECT * FROM (SELECT 1 SETTINGS max_execution_time = 0)',
    expect: 'refused',
  },
  FORMAT: { sql: 'SELECT 1 FORMAT TSV', expect: 'refused' },
  'INTO OUTFILE': { sql: "SELECT 1 INTO OUTFILE '/tmp/x'", expect: 'refused' },
  'a second statement': { sql: 'SELECT 1; DROP TABLE events', expect: 'refused' },
  'a ClickHouse parameter': { sql: 'SELECT {weir_project:UInt64}', expect: 'refused' },
  'WITH RECURSIVE': {
    sql: 'WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r) SELECT * FROM r',
    expect: 'refused',
  },
  'a CTE that names itself': { sql: 'WITH a AS (SELECT * FROM a) SELECT * FROM a', expect: 'refused' },

  // Functions outside the allow-list
  sleep: { sql: 'SELECT sleep(3)', expect: 'refused' },
  sleepEachRow: { sql: 'SELECT sleepEachRow(1) FROM events', expect: 'refused' },
  throwIf: { sql: "SELECT throwIf(count() > 0) FROM events WHERE event LIKE '%SECRET%'", expect: 'refused' },
  'file as a function': { sql: "SELECT file('/etc/passwd')", expect: 'refused' },
  currentDatabase: { sql: 'SELECT currentDatabase()', expect: 'refused' },
  getSetting: { sql: "SELECT getSetting('readonly')", expect: 'refused' },
  dictGet: { sql: "SELECT dictGet('d', 'x', 1)", expect: 'refused' },
  joinGet: { sql: "SELECT joinGet('default.events', 'event', 1)", expect: 'refused' },
  hasColumnInTable: { sql: "SELECT hasColumnInTable('default', 'events', 'uuid')", expect: 'refused' },
  'version and host': { sql: 'SELECT version(), hostName()', expect: 'refused' },
  '_CAST, internal': { sql: "SELECT _CAST(1, 'UInt64')", expect: 'refused' },
  'globalIn as a function': { sql: 'SELECT globalIn(1, (1, 2))', expect: 'refused' },

  // Variables carrying SQL
  'a variable closing the string': {
    sql: 'SELECT count() FROM events WHERE event = {variables.e}',
    variables: { e: "x' OR project_id = 2 OR '1' = '1" },
    expect: 'confined',
    results: [[0]],
  },
  'a variable with a comment and a union': {
    sql: 'SELECT event FROM events WHERE distinct_id = {variables.d}',
    variables: { d: "'; SELECT name FROM system.tables --" },
    expect: 'confined',
    results: [],
  },
  'a list variable of SQL': {
    sql: 'SELECT count() FROM events WHERE event IN {variables.l}',
    variables: { l: ["') OR 1=1 --", '1) UNION ALL SELECT 1 --'] },
    expect: 'confined',
    results: [[0]],
  },
  'a variable as the project': {
    sql: 'SELECT count() FROM events WHERE project_id = {variables.weir_project}',
    variables: { weir_project: 2 },
    expect: 'confined',
    results: [[0]],
  },
  'a variable shaped like a PostHog object with SQL in its name': {
    sql: 'SELECT {variables.v}',
    variables: { v: { code_name: "v'); DROP TABLE events; --", value: 1 } },
    expect: 'refused',
    code: /missing_variable|unknown_variable/,
  },

  // Size and depth
  'a giant IN list': { sql: inList(15_000), expect: 'confined', results: [[0]] },
  'a query longer than the limit': { sql: inList(30_000), expect: 'refused' },
  'a giant list variable': {
    sql: 'SELECT count() FROM events WHERE distinct_id IN {variables.ids}',
    variables: { ids: Array.from({ length: 50_000 }, (_, i) => `user-${i}`) },
    expect: 'confined',
    results: [[0]],
  },
  'deeply nested parentheses, within the limit': { sql: deep(200), expect: 'confined', results: [[1]] },
  'deeply nested parentheses, past the limit': { sql: deep(300), expect: 'refused' },
  'a long AND chain': {
    sql: `${P1_EVENTS} WHERE ${Array.from({ length: 2000 }, (_, i) => `event != 'e${i}'`).join(' AND ')} AND event LIKE '%SECRET%'`,
    expect: 'confined',
    results: [[0]],
  },
  'deeply nested subqueries': {
    sql: nestedSubqueries(120),
    expect: 'refused',
    code: /invalid_query|query_limit_exceeded/,
  },
  'a result past the row limit': {
    sql: 'SELECT arrayJoin(range(100000))',
    expect: 'refused',
    code: 'query_limit_exceeded',
  },

  // Evaluation before confinement: converting project 2's values would fail, or leak them in the message
  'converting every value of a column': {
    sql: "SELECT sum(toInt64(properties.n)) FROM events WHERE event = 'numbered'",
    expect: 'confined',
    results: [[12]],
  },
  'converting in WHERE': {
    sql: "SELECT count() FROM events WHERE toInt64(properties.n) > 0 AND event = 'numbered'",
    expect: 'confined',
    results: [[2]],
  },
  'converting person properties': {
    sql: "SELECT sum(toInt64(person.properties.n)) FROM events WHERE event = 'numbered'",
    expect: 'confined',
    results: [[12]],
  },
  'converting a table without FINAL': {
    sql: "SELECT sum(toInt64(details.n)) FROM ingestion_warnings WHERE type = 'numbered'",
    expect: 'confined',
    results: [[4]],
  },
};

for (const [name, attack] of Object.entries(ATTACKS)) {
  t.test(name, async (t) => {
    const res = await queryApi(w, attack.sql, { variables: attack.variables });
    const body = res.json as { code?: string; detail?: string; results?: unknown[][] };
    // The answer, not the echo of the query (`hogql`, `clickhouse`), which may hold the word itself.
    t.notMatch(JSON.stringify([body.results, body.detail]), SECRET, 'nothing of project 2 in the answer');
    if (attack.expect === 'refused') {
      t.equal(res.status, 400, `refused: ${res.text.slice(0, 300)}`);
      t.match(body.code, attack.code ?? 'invalid_query');
      t.match(body.detail, /\S/);
    } else {
      t.equal(res.status, 200, `confined: ${res.text.slice(0, 300)}`);
      if (attack.results) t.same(body.results, attack.results);
    }
  });
}
