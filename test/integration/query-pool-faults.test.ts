/**
 * The query actor pool's faults: a crashed actor, a missing object, an unavailable store, a damaged Parquet
 * object, an executor's error, closing with runs in flight. In each the pool goes on answering.
 */
import { join } from 'node:path';
import t from 'tap';
import { AppError } from '../../src/errors/app-error.ts';
import { MaterializedTableError } from '../../src/query/materialize/pool/protocol.ts';
import { poolFixture, run, runCount, value } from '../helpers/query-pool.ts';

const fixture = await poolFixture(t);
const { pool, store, dataDir } = fixture;

t.test('an actor that dies mid-run is started again and the run retried once', async (t) => {
  const { pool: p, metrics } = pool(t);
  const marker = join(dataDir, 'crashed-once');
  const answer = await run(p, 'm/a.parquet', { op: 'crash-once', marker }, undefined, { limit: 1 });
  t.same(answer.rows, [['0', 0n]], 'answered by the restarted actor');
  t.equal(await value(metrics, 'weir_query_actor_restarts_total', { reason: 'crash' }), 1);
});

t.test('a run that kills its actor twice is answered 503, and the actor serves the next run', async (t) => {
  const { pool: p, metrics } = pool(t);
  const err = await run(p, 'm/a.parquet', { op: 'crash' }).catch((e: unknown) => e);
  t.type(err, AppError);
  t.equal((err as AppError).status, 503);
  t.equal((err as AppError).retriable, true);
  t.equal(await value(metrics, 'weir_query_actor_restarts_total', { reason: 'crash' }), 2);
  const answer = await run(p, 'm/a.parquet', { op: 'rows', column: 'k' }, '2', { limit: 1 });
  t.same(answer.rows, [['2', 2n]]);
  t.equal(await runCount(metrics, 'error'), 1);
});

t.test("the executor's AppError reaches the caller as it was", async (t) => {
  const { pool: p } = pool(t);
  const err = await run(p, 'm/a.parquet', { op: 'throw' }).catch((e: unknown) => e);
  t.type(err, AppError);
  t.match(err, { code: 'invalid_variable', status: 400, attr: 'value', message: 'value is not a value' });
});

t.test(
  'a missing object, an unavailable store: a MaterializedTableError, and the pool goes on',
  async (t) => {
    const { pool: p, metrics } = pool(t);
    const missing = await run(p, 'm/none.parquet', { op: 'rows' }).catch((e: unknown) => e);
    t.type(missing, MaterializedTableError);
    t.match(missing, { problem: 'not_found', tableKey: 'm/none.parquet', status: 500 });
    fixture.setUnavailable(true);
    t.teardown(() => fixture.setUnavailable(false));
    const down = await run(p, 'm/a.parquet', { op: 'rows' }).catch((e: unknown) => e);
    t.match(down, { problem: 'unavailable', status: 503, retriable: true });
    fixture.setUnavailable(false);
    const answer = await run(p, 'm/a.parquet', { op: 'rows' }, undefined, { limit: 1 });
    t.same(answer.rows, [['0', 0n]]);
    t.equal(await value(metrics, 'weir_query_actor_restarts_total'), 0, 'no actor died');
  },
);

t.test(
  'a damaged Parquet object is a clear error; its actor starts afresh and serves good tables',
  async (t) => {
    const good = await store.get('m/a.parquet');
    const damaged = Buffer.from(good);
    for (let i = 100; i < Math.min(damaged.length - 100, 2000); i++)
      damaged[i] = (damaged[i]! * 31 + 7) & 255;
    await store.put('m/damaged.parquet', damaged);
    await store.put('m/truncated.parquet', good.subarray(0, good.length >> 1));
    const { pool: p, metrics } = pool(t);
    await run(p, 'm/b.parquet', { op: 'rows' });
    for (const key of ['m/damaged.parquet', 'm/truncated.parquet']) {
      const err = await run(p, key, { op: 'rows' }).catch((e: unknown) => e);
      t.type(err, MaterializedTableError, key);
      t.match(err, { problem: 'damaged', tableKey: key, status: 500 });
      t.match((err as Error).message, `the materialization ${key} could not be read as Parquet: `);
    }
    const answer = await run(p, 'm/b.parquet', { op: 'rows', column: 'k' }, '5', { limit: 1 });
    t.same(answer.rows, [['5', 10n]], 'a good table read again after the restart');
    t.equal(await value(metrics, 'weir_query_actor_restarts_total', { reason: 'retire' }), 2);
    t.equal(await value(metrics, 'weir_query_actor_restarts_total', { reason: 'crash' }), 0);
    t.equal(await value(metrics, 'weir_materialized_loads_total', { result: 'failed' }), 2);
  },
);

t.test('close answers the runs in flight 503 and refuses new ones', async (t) => {
  const { pool: p } = pool(t);
  const pending = run(p, 'm/a.parquet', { op: 'rows' }).catch((e: unknown) => e);
  await p.close();
  const err = await pending;
  // The run may have been answered before the thread ended; if not, it is a 503.
  if (err instanceof Error) t.match(err, { status: 503 });
  const after = await run(p, 'm/a.parquet', { op: 'rows' }).catch((e: unknown) => e);
  t.match(after, { status: 503, message: 'The query pool is closed.' });
});
