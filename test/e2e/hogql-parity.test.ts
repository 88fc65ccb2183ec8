/**
 * HogQL parity (issue 42): the parity corpus (test/fixtures/dialect/parity) — PostHog's own tests and the
 * HogQL its code runs, every query accepted by PostHog's parser — through the query API of a real Weir on
 * the compat dataset. A query must give its hand-computed answer, or answer 200 when it has none; refused
 * and wrong answers are allowed only for the queries listed below, each with the reason. The list is a
 * ratchet: a listed query that now answers right fails until it is removed, so it only shrinks while Weir
 * is taught these constructs.
 */
import t from 'tap';
import { loadParityCorpus, runCompatCorpus } from '../helpers/compat-corpus.ts';
import { loadCompatDataset } from '../helpers/compat-dataset.ts';
import { startTestWeir } from '../helpers/weir.ts';

/** Queries Weir does not answer right yet, each with its class: the refusal, or the wrong answer. */
const NOT_YET: Readonly<Record<string, string>> = {
  'parser-hogqlx-actors-query-source':
    'refused: Syntax error: <ActorsQuery> cannot be a table: only <HogQLQuery query="…" /> can stand in FROM',
};

const corpus = loadParityCorpus();
const w = await startTestWeir();
t.teardown(() => w.close());
await loadCompatDataset(w);

// Sent a few at a time up front, then asserted one subtest each.
const outcomes = await runCompatCorpus(w, corpus);

t.test('the corpus is real, mostly checked, and the list names its queries', (t) => {
  t.ok(corpus.length >= 300, `${corpus.length} queries`);
  t.ok(corpus.filter((q) => q.expect).length >= 200, 'most have a hand-computed answer');
  for (const q of corpus) t.match(q.source, /^https:\/\//, `${q.name} says where it comes from`);
  const names = new Set(corpus.map((q) => q.name));
  for (const name of Object.keys(NOT_YET)) t.ok(names.has(name), `${name} is a query of the corpus`);
  t.end();
});

corpus.forEach((q, i) => {
  t.test(`${q.name} (${q.file}:${q.line})`, (t) => {
    const o = outcomes[i]!;
    const listed = NOT_YET[q.name];
    if (o.kind === 'right' || o.kind === 'answered') {
      if (listed)
        t.fail(
          `${o.kind === 'right' ? 'answers right' : 'answers 200'} now: remove it from the list (${listed})`,
        );
      else t.pass(o.kind === 'right' ? 'the hand-computed answer' : 'answers 200');
    } else if (listed) {
      t.pass(`not yet (${listed})`);
    } else if (o.kind === 'refused') {
      t.fail(`refused ${o.status}: ${o.message}`, { source: q.source });
    } else {
      t.same(o.results, q.expect, `the hand-computed answer (${q.source})`);
    }
    t.end();
  });
});
