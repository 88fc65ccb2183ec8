/**
 * HogQL compatibility (issue 26): real queries PostHog users write, from PostHog's docs, tutorials and tests
 * (test/fixtures/dialect/compat), run through the query API of a real Weir on a fixed dataset captured over
 * HTTP (test/helpers/compat-dataset.ts). A query with an expected answer must give it (worked out by hand,
 * with HogQL's meaning); one without must at least answer 200.
 */
import t from 'tap';
import { loadCompatCorpus, runCompatCorpus } from '../helpers/compat-corpus.ts';
import { loadCompatDataset } from '../helpers/compat-dataset.ts';
import { startTestWeir } from '../helpers/weir.ts';

const corpus = loadCompatCorpus();
const w = await startTestWeir();
t.teardown(() => w.close());
await loadCompatDataset(w);

// Sent a few at a time up front, then asserted one subtest each.
const outcomes = await runCompatCorpus(w, corpus);

t.test('the corpus is real and mostly checked', (t) => {
  t.ok(corpus.length >= 120, `${corpus.length} queries`);
  t.ok(corpus.filter((q) => q.expect).length >= 100, 'most have a hand-computed answer');
  for (const q of corpus) t.match(q.source, /^https:\/\//, `${q.name} says where it comes from`);
  t.end();
});

corpus.forEach((q, i) => {
  t.test(`${q.name} (${q.file}:${q.line})`, (t) => {
    const o = outcomes[i]!;
    if (o.kind === 'refused') t.fail(`refused ${o.status}: ${o.message}`, { source: q.source });
    else if (o.kind === 'wrong') t.same(o.results, q.expect, `the hand-computed answer (${q.source})`);
    else t.pass(o.kind === 'right' ? 'the hand-computed answer' : 'answers 200');
    t.end();
  });
});
