/**
 * PostHog's own parser as an oracle for Weir's (issue 42): for every query of the dialect corpora — the
 * compat and parity corpora of real HogQL, `valid/*.sql` and `malformed.sql` — PostHog's parser accepts it
 * exactly when `parseDialect` does. Where the two differ today the query is listed below with the reason.
 * A listed query that starts agreeing fails too, so the lists only shrink: a Weir extension that PostHog
 * gains, or HogQL Weir is taught, must leave its list.
 */
import t from 'tap';
import { parseDialect } from '../../src/query/dialect/mod.ts';
import { loadCompatCorpus, loadParityCorpus } from '../helpers/compat-corpus.ts';
import { loadMalformedCorpus, loadValidCorpus } from '../helpers/dialect-corpus.ts';
import { posthogAccepts } from '../helpers/posthog-parser.ts';

/** Weir accepts, PostHog's grammar does not: ClickHouse syntax Weir keeps on purpose. */
const WEIR_EXTENSIONS: Readonly<Record<string, string>> = {
  'valid:every comment style': 'nested /* /* */ */ comments, as ClickHouse has them',
  'valid:string escapes': "ClickHouse's backslash escapes in strings ('it\\'s', '\\x41')",
  'valid:arithmetic and concatenation': "ClickHouse's DIV and MOD operators",
  'valid:tuples and tuple access': "ClickHouse's empty tuple ()",
  'valid:interval forms': "ClickHouse's INTERVAL forms HogQL lacks (INTERVAL '2 days', a placeholder count)",
};

/** PostHog's grammar accepts, Weir refuses on purpose (its error is the better answer, or the form is unsafe). */
const WEIR_REFUSES_BY_DESIGN: Readonly<Record<string, string>> = {
  'malformed:SELECT 1 #comment': "PostHog starts a comment at any '#'; ClickHouse (and Weir) needs '# '",
  'malformed:SELECT 1abc': "PostHog reads '1abc' as 1 AS abc; Weir calls it a malformed number",
  'malformed:SELECT 1.2.3': "PostHog reads '1.2.3' as (1.2).3; Weir calls it a malformed number",
  'malformed:SELECT 0x': "PostHog reads '0x' as 0 AS x",
  'malformed:SELECT 1e FROM t': "PostHog reads '1e' as 1 AS e",
  'malformed:SELECT `` FROM t': 'PostHog takes an empty quoted identifier',
  "malformed:SELECT '\\xFF\\xFE'":
    'PostHog keeps \\x escapes as written; Weir decodes them and refuses bytes that are not UTF-8',
  'malformed:SELECT a FROM t LIMIT 10 ORDER BY a':
    "PostHog's parser takes an ORDER BY after LIMIT and drops it",
  'malformed:SELECT count() FROM (events)': 'PostHog takes a parenthesised table name',
  'malformed:SELECT count() FROM {variables.table}':
    "PostHog's placeholders may stand for tables; Weir's variables are values",
  'malformed:SELECT count() FROM events WHERE e = {event:String}':
    'PostHog reads {event:String} as a dict literal',
  'malformed:SELECT count() FROM events WHERE e = {vars.event}':
    "PostHog's placeholders take any name; Weir's are {variables.name}",
  'malformed:SELECT count() FROM events WHERE e = {variables.event:String}':
    'PostHog reads it as a dict literal',
  'malformed:SELECT count() FROM events WHERE e = {variables.a.b}': "PostHog's placeholders take any chain",
  'malformed:SELECT * FROM events e JOIN persons p WHERE e.person_id = p.id':
    'PostHog parses a JOIN without ON or USING',
  'malformed:SELECT * FROM events GLOBAL JOIN persons USING id':
    'GLOBAL joins are a cluster matter Weir keeps to itself',
  'malformed:SELECT count() FROM default.events.x':
    'PostHog takes table names of any length (its nested tables)',
  'malformed:SELECT count() WHERE x -> x > 1':
    'PostHog parses a lambda anywhere (Hog programs); Weir only as an argument',
  'malformed:SELECT quantile(DISTINCT 0.5)(x) FROM t':
    'PostHog takes DISTINCT in the parameters of a parametric call',
  'malformed:SELECT DISTINCT ON (a) a, b FROM t': 'DISTINCT ON is not supported; LIMIT 1 BY says the same',
  'malformed:SELECT day FROM t ORDER BY day WITH FILL': 'WITH FILL is not supported',
  'malformed:WITH RECURSIVE r AS (SELECT 1) SELECT * FROM r': 'WITH RECURSIVE is not supported',
  'malformed:SELECT a, row_number() OVER () QUALIFY a = 1': 'QUALIFY is not supported',
  "malformed:SELECT a FROM t ORDER BY a COLLATE 'de'": 'COLLATE is not supported',
  'malformed:SELECT 1 -FROM t': 'PostHog takes FROM as a column name (1 - FROM AS t)',
  'malformed:SELECT NOT FROM t': 'PostHog takes NOT as a column name',
  'malformed:SELECT a ?? FROM t': 'PostHog takes FROM as a column name (ifNull(a, FROM) AS t)',
  'malformed:SELECT a FROM t GROUP BY GROUPING SETS ((a), ()) WITH ROLLUP':
    'GROUPING SETS with WITH ROLLUP is not supported',
  'parity:parser-join-using-constant':
    'USING takes column names; USING 1 names none (ClickHouse refuses it too)',
  'parity:parser-placeholder-expression':
    "a placeholder holding an expression: Weir's placeholders are {variables.name}",
};

/** PostHog's grammar accepts, Weir does not parse yet: the ratchet of what Weir is being taught. */
const NOT_YET: Readonly<Record<string, string>> = {
  'parity:parser-hogqlx-actors-query-source': '<ActorsQuery … /> as a FROM source',
};

interface Case {
  readonly key: string;
  readonly text: string;
}

const cases: Case[] = [
  ...loadCompatCorpus().map((q) => ({ key: `compat:${q.name}`, text: q.text })),
  ...loadParityCorpus().map((q) => ({ key: `parity:${q.name}`, text: q.text })),
  ...loadValidCorpus().map((q) => ({ key: `valid:${q.name}`, text: q.text })),
  // malformed.sql has no names: a case is known by its text, which is short.
  ...loadMalformedCorpus().map((q) => ({ key: `malformed:${q.text}`, text: q.text })),
];

function weirAccepts(text: string): { ok: true } | { ok: false; message: string } {
  try {
    parseDialect(text);
    return { ok: true };
  } catch (err) {
    return { ok: false, message: (err as Error).message };
  }
}

t.test('the corpora are there and the lists name real queries', (t) => {
  t.ok(cases.length > 700, `${cases.length} queries`);
  const keys = new Set(cases.map((c) => c.key));
  t.equal(keys.size, cases.length, 'every query has its own key');
  for (const list of [WEIR_EXTENSIONS, WEIR_REFUSES_BY_DESIGN, NOT_YET])
    for (const key of Object.keys(list)) t.ok(keys.has(key), `${key} is a query of the corpora`);
  t.end();
});

t.test("PostHog's parser accepts a query exactly when Weir's does", (t) => {
  for (const c of cases) {
    const posthog = posthogAccepts(c.text);
    const weir = weirAccepts(c.text);
    const extension = WEIR_EXTENSIONS[c.key];
    const byDesign = WEIR_REFUSES_BY_DESIGN[c.key];
    const notYet = NOT_YET[c.key];
    const listed = extension ?? byDesign ?? notYet;
    if (posthog.ok === weir.ok) {
      if (listed) t.fail(`${c.key}: both parsers agree now; remove it from the list (${listed})`);
      else t.pass(`${c.key}: both ${weir.ok ? 'accept' : 'refuse'}`);
    } else if (weir.ok) {
      if (extension) t.pass(`${c.key}: a Weir extension (${extension})`);
      else
        t.fail(`${c.key}: Weir accepts, PostHog refuses`, {
          posthog: posthog.ok ? '' : posthog.message,
          text: c.text.slice(0, 300),
        });
    } else if (byDesign ?? notYet) {
      t.pass(`${c.key}: Weir refuses (${byDesign ?? notYet})`);
    } else {
      t.fail(`${c.key}: PostHog accepts, Weir refuses`, { weir: weir.message, text: c.text.slice(0, 300) });
    }
  }
  t.end();
});
