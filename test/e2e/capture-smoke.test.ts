import t from 'tap';
import { PROJECT_API_KEY, post, startTestWeir } from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());

t.test('a single event is stored once it is answered 200', async (t) => {
  const res = await post(
    `${w.url}/i/v0/e/`,
    JSON.stringify({ api_key: PROJECT_API_KEY, event: 'signup', distinct_id: 'smoke-1' }),
  );
  t.equal(res.status, 200);
  t.same(res.json, { status: 'Ok' });
  const rows = await w.rows<{ event: string }>(`SELECT event FROM events WHERE distinct_id = 'smoke-1'`);
  t.same(rows, [{ event: 'signup' }]);
});

t.test('each answered request is counted, and timed, under its route', async (t) => {
  const count = async (pattern: RegExp): Promise<number> => {
    const text = await (await fetch(`${w.url}/metrics`)).text();
    return Number(pattern.exec(text)?.[1] ?? 0);
  };
  const answered = /^weir_capture_requests_total\{route="batch",status="200"\} (\d+)$/m;
  const timed = /^weir_capture_request_duration_seconds_count\{route="batch"\} (\d+)$/m;
  const before = [await count(answered), await count(timed)];
  for (let i = 0; i < 3; i++) {
    const res = await post(
      `${w.url}/batch/`,
      JSON.stringify({ api_key: PROJECT_API_KEY, batch: [{ event: 'timed', distinct_id: `timed-${i}` }] }),
    );
    t.equal(res.status, 200);
  }
  t.same([(await count(answered)) - before[0]!, (await count(timed)) - before[1]!], [3, 3]);
});
