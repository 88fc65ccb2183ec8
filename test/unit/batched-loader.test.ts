import t from 'tap';
import { BatchedLoader } from '../../src/ingest/persons/batched-loader.ts';

t.test('requests of one turn share a query; those made while it runs share the next', async (t) => {
  const queries: string[][] = [];
  let release: () => void = () => undefined;
  let started: () => void = () => undefined;
  const running = new Promise<void>((r) => (started = r));
  const loader = new BatchedLoader<number>({ maxKeys: 100 }, async (keys) => {
    queries.push([...keys]);
    if (queries.length === 1) {
      started();
      await new Promise<void>((r) => (release = r));
    }
    return new Map(keys.filter((k) => k !== 'missing').map((k) => [k, k.length]));
  });
  const first = loader.load(['a']);
  const second = loader.load(['bb', 'missing']);
  await running;
  const third = loader.load(['ccc', 'a']);
  const fourth = loader.load(['dddd']);
  release();
  t.same([...(await first)].sort(), [
    ['a', 1],
    ['bb', 2],
  ]);
  t.equal((await second).get('bb'), 2);
  t.notOk((await second).has('missing'), 'nothing stored: absent');
  t.equal((await third).get('ccc'), 3);
  t.equal((await fourth).get('dddd'), 4);
  t.same(queries, [
    ['a', 'bb', 'missing'],
    ['ccc', 'a', 'dddd'],
  ]);
});

t.test('a failed query fails its requests only; the next ones run', async (t) => {
  let fail = true;
  const loader = new BatchedLoader<number>({ maxKeys: 1 }, (keys) => {
    if (fail) {
      fail = false;
      return Promise.reject(new Error('store down'));
    }
    return Promise.resolve(new Map(keys.map((k) => [k, 1])));
  });
  const a = loader.load(['a']);
  const b = loader.load(['b']);
  await t.rejects(a, /store down/);
  t.equal((await b).get('b'), 1, 'over maxKeys: a query of its own, which succeeds');
  t.same(await loader.load([]), new Map());
});
