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
