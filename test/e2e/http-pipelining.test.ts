/**
 * HTTP/1.1 pipelining (docs/http.md). uWS parses every request of a read at once and takes a pipelined
 * request only if the ones before it are answered by then: answers given at once come back in order, while
 * a request parsed behind an answer still pending (capture waits for durability) makes uWS close the
 * connection, unanswered. What a client then relies on: the requests it retries are stored exactly once.
 * Node's http answers every pipelined request, in order.
 */
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { RawConnection, rawRequest } from '../helpers/raw-http.ts';
import { PROJECT_API_KEY, post, startTestWeir, testTransport, waitFor } from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());

const event = (uuid: string) =>
  JSON.stringify({ api_key: PROJECT_API_KEY, event: 'pipelined', distinct_id: 'pipeliner', uuid });

t.test('requests answered at once are answered in order, 1,000 in one write', async (t) => {
  const sequence: [string, number][] = [];
  for (let i = 0; i < 200; i++) {
    sequence.push([rawRequest('GET', '/_health'), 200]);
    sequence.push([rawRequest('OPTIONS', '/i/v0/e/', '', { Origin: 'https://a.example' }), 204]);
    sequence.push([rawRequest('POST', '/i/v0/e/', '{"not json'), 400]);
    sequence.push([rawRequest('GET', `/no/such/route/${i}`), 404]);
    sequence.push([rawRequest('GET', '/batch/'), 405]);
  }
  const conn = await RawConnection.open(w.url);
  t.teardown(() => conn.destroy());
  await conn.write(sequence.map(([raw]) => raw).join(''));
  const statuses: (number | undefined)[] = [];
  for (let i = 0; i < sequence.length; i++) statuses.push((await conn.response())?.status);
  t.same(
    statuses,
    sequence.map(([, status]) => status),
    'every answer, in order',
  );
  t.notOk(conn.closed, 'the connection stays open');
});

t.test(
  'capture requests pipelined in one write: closed unanswered, and a retry stores each once',
  async (t) => {
    const uuids = [randomUUID(), randomUUID(), randomUUID()];
    const conn = await RawConnection.open(w.url);
    t.teardown(() => conn.destroy());
    await conn.write(uuids.map((u) => rawRequest('POST', '/i/v0/e/', event(u))).join(''));
    if (testTransport() === 'uws') {
      t.equal(await conn.response(), undefined, 'uWS closes the connection before any answer');
      // The client retries what was not answered, one request at a time, as RFC 9112 §9.3.2 asks.
      for (const u of uuids) t.equal((await post(`${w.url}/i/v0/e/`, event(u))).status, 200, `retry of ${u}`);
    } else {
      for (const u of uuids) t.equal((await conn.response())?.status, 200, `Node's http answers ${u}`);
      // A retry all the same (a client that did not wait for the answers) stores nothing twice.
      for (const u of uuids) t.equal((await post(`${w.url}/i/v0/e/`, event(u))).status, 200, `retry of ${u}`);
    }
    const counts = await waitFor(async () => {
      const rows = await w.rows<{ uuid: string; n: string }>(
        "SELECT toString(uuid) AS uuid, count() AS n FROM events WHERE distinct_id = 'pipeliner' GROUP BY uuid",
      );
      return rows.length === uuids.length ? rows : undefined;
    });
    t.same(
      counts.map((r) => Number(r.n)),
      [1, 1, 1],
      'each event is stored once',
    );
  },
);
