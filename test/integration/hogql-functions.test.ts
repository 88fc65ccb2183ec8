/**
 * Every HogQL function name Weir takes reaches functions that exist in chDB's ClickHouse and that Weir's own
 * list allows: the call the resolver writes for it is looked up in `system.functions` (an aggregate with
 * combinators by its base name and `system.aggregate_function_combinators`).
 */
import { query } from 'chdb';
import t from 'tap';
import type { Call, Expr } from '../../src/query/dialect/ast.ts';
import { functionKind } from '../../src/query/resolver/functions.ts';
import { HOGQL_ALLOWED, HOGQL_REFUSED, hogqlCall } from '../../src/query/resolver/hogql-functions.ts';

const rows = (sql: string): Record<string, unknown>[] =>
  query(sql, 'JSONEachRow')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);

const functions = rows('SELECT name, case_insensitive FROM system.functions');
const exact = new Set(functions.map((f) => String(f['name'])));
const anyCase = new Set(
  functions.filter((f) => f['case_insensitive']).map((f) => String(f['name']).toLowerCase()),
);
const combinators = rows('SELECT name FROM system.aggregate_function_combinators').map((c) =>
  String(c['name']),
);

/** Functions ClickHouse's parser itself rewrites, so absent from system.functions: each shown to run. */
const PARSER_FORMS: Readonly<Record<string, string>> = {
  dateAdd: 'SELECT dateAdd(day, 1, today())',
  dateSub: 'SELECT dateSub(day, 1, today())',
  date_add: 'SELECT date_add(day, 1, today())',
  date_sub: 'SELECT date_sub(day, 1, today())',
  timeStampAdd: 'SELECT timeStampAdd(now(), INTERVAL 1 DAY)',
  timeStampSub: 'SELECT timeStampSub(now(), INTERVAL 1 DAY)',
  untuple: 'SELECT untuple((1, 2))',
};

function exists(name: string): boolean {
  if (exact.has(name) || anyCase.has(name.toLowerCase())) return true;
  for (const c of combinators)
    if (name.length > c.length && name.endsWith(c) && exists(name.slice(0, -c.length))) return true;
  return false;
}

/** The names of the calls in a tree. */
function calls(e: unknown, out: string[] = []): string[] {
  if (Array.isArray(e)) for (const x of e) calls(x, out);
  else if (e !== null && typeof e === 'object') {
    if ((e as Expr).kind === 'call') out.push((e as Call).name);
    for (const [k, v] of Object.entries(e)) if (k !== 'pos') calls(v, out);
  }
  return out;
}

/** What the resolver writes for `name`, with as many arguments as it takes (a scale for toDecimal). */
function written(name: string): Expr {
  for (let n = 0; n <= 7; n++) {
    const args: Expr[] = Array.from({ length: n }, (_, i) =>
      // arrayReduce and its kind take an aggregate's name first.
      i === 0 ? { kind: 'string', value: 'sum' } : { kind: 'number', text: '1' },
    );
    const e: Call = { kind: 'call', name, params: null, args, distinct: false, over: null };
    try {
      return hogqlCall(e);
    } catch {
      // Not that many arguments; try one more.
    }
  }
  throw new Error(`no argument count suits ${name}`);
}

t.test('every allowed HogQL name runs as functions chDB has and Weir allows', (t) => {
  t.ok(HOGQL_ALLOWED.length > 450, `${HOGQL_ALLOWED.length} HogQL names`);
  for (const name of HOGQL_ALLOWED) {
    const w = written(name);
    const names = calls(w);
    t.ok(names.length > 0 || w.kind === 'tuple', `${name} makes a call (or a tuple: sparkline)`);
    for (const n of names) {
      t.ok(functionKind(n) !== undefined, `${name}: Weir allows ${n}`);
      if (Object.hasOwn(PARSER_FORMS, n))
        t.doesNotThrow(() => query(PARSER_FORMS[n]!, 'TSV'), `${name}: ${n} runs`);
      else t.ok(exists(n), `${name}: chDB has ${n}`);
    }
  }
  t.end();
});

t.test('no HogQL name is both allowed and refused', (t) => {
  const allowed = new Set(HOGQL_ALLOWED.map((n) => n.toLowerCase()));
  t.same(
    Object.keys(HOGQL_REFUSED).filter((n) => allowed.has(n)),
    [],
  );
  t.end();
});
