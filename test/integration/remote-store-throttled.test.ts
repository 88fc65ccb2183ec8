/**
 * A query node's read carries its project and kind to the store owner, and the owner's refusal of an ad-hoc
 * query past its project's limit comes back as the same StoreThrottled (the query API's 429), not as a 503.
 */
import { createServer } from 'node:http';
import t from 'tap';
import { StoreThrottled } from '../../src/core/ports.ts';
import { RemoteStore } from '../../src/store/remote-store.ts';

t.test(
  "the owner's throttled refusal comes back as StoreThrottled, the read's project and kind sent",
  async (t) => {
    const bodies: unknown[] = [];
    const server = createServer((req, res) => {
      let text = '';
      req.on('data', (c: Buffer) => (text += c.toString('utf8')));
      req.on('end', () => {
        bodies.push(JSON.parse(text));
        res.writeHead(422, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            store_error: {
              code: 202,
              type: 'TOO_MANY_SIMULTANEOUS_QUERIES',
              message: 'project 7 already has 4 ad-hoc queries running or waiting for the engine',
              waitTimeout: false,
              throttled: 'WEIR_QUERY_ADHOC_CONCURRENCY',
            },
          }),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.teardown(() => server.close());
    const { port } = server.address() as { port: number };
    const store = new RemoteStore({
      url: `http://127.0.0.1:${port}`,
      token: 'store-token-for-tests-0123456789',
      timeoutMs: 5000,
      exportTimeoutMs: 5000,
    });
    t.teardown(() => store.close());
    const err = await store
      .queryTable('SELECT 1', { weir_project: 7 }, { project: 7, kind: 'adhoc', maxWaitMs: 1000 })
      .catch((e: unknown) => e);
    t.type(err, StoreThrottled);
    t.equal((err as StoreThrottled).limit, 'WEIR_QUERY_ADHOC_CONCURRENCY');
    t.match((err as Error).message, /project 7 already has 4 ad-hoc queries/);
    t.same(bodies, [
      { sql: 'SELECT 1', params: { weir_project: 7 }, maxWaitMs: 1000, project: 7, kind: 'adhoc' },
    ]);
  },
);
