/**
 * What one request may cost in memory (issue 31): a batch of more items than capture takes is refused with 413
 * before it is parsed, and nameless items, dropped, cost a bounded number of warning rows.
 */
import t from 'tap';
import { MAX_DROP_WARNINGS } from '../../src/capture/capture-service.ts';
import { MAX_BATCH_ITEMS } from '../../src/capture/limits.ts';
import { metricValue } from '../helpers/capture-bodies.ts';
import { PROJECT_API_KEY, post, startTestWeir } from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());

const batchOf = (n: number, item: string): string =>
  `{"api_key":"${PROJECT_API_KEY}","batch":[${Array.from({ length: n }, () => item).join(',')}]}`;

t.test('a batch of a million {} (3 MB) is refused with 413 before it is spent', async (t) => {
  const body = batchOf(1_000_000, '{}');
  t.ok(body.length < 3_100_000, 'the body is small: its cost would come from its items');
  const dropped = () =>
    metricValue(w.url, 'weir_capture_events_dropped_total', { reason: 'missing_event_name' });
  const droppedBefore = await dropped();
  global.gc?.();
  const rssBefore = process.memoryUsage().rss;
  const res = await post(`${w.url}/batch/`, body);
  const grew = process.memoryUsage().rss - rssBefore;
  t.equal(res.status, 413);
  t.match(JSON.parse(res.text), { code: 'payload_too_large', attr: 'batch' });
  t.match((JSON.parse(res.text) as { detail: string }).detail, /more than 100,000 events/);
  t.equal(await dropped(), droppedBefore, 'no item was looked at');
  // Parsed and dropped one by one, the same body took ~700 MB; refused before parsing, little beyond its bytes.
  t.ok(grew < 200 * 1024 * 1024, `resident memory grew ${Math.round(grew / 1048576)} MB`);
});

t.test('a batch at the item limit is taken; its drops are counted, and listed up to a bound', async (t) => {
  const dropped = () =>
    metricValue(w.url, 'weir_capture_events_dropped_total', { reason: 'missing_event_name' });
  const droppedBefore = await dropped();
  const rows = async (): Promise<{ listed: number; summaries: string[] }> => {
    const [r] = await w.rows<{ listed: string }>(
      `SELECT countIf(JSONHas(details, 'index')) AS listed FROM ingestion_warnings
       WHERE type = 'event_dropped_missing_event_name'`,
    );
    const summaries = await w.rows<{ details: string }>(
      `SELECT details FROM ingestion_warnings
       WHERE type = 'event_dropped_missing_event_name' AND JSONHas(details, 'more')`,
    );
    return { listed: Number(r?.listed), summaries: summaries.map((s) => s.details) };
  };
  const before = await rows();
  const items = Array.from({ length: MAX_BATCH_ITEMS }, (_, i) =>
    i === 5 ? '{"event":"mem_kept","distinct_id":"mem-1"}' : '{}',
  ).join(',');
  const res = await post(`${w.url}/batch/`, `{"api_key":"${PROJECT_API_KEY}","batch":[${items}]}`);
  t.equal(res.status, 200, res.text);
  t.equal(await dropped(), droppedBefore + MAX_BATCH_ITEMS - 1, 'every drop counted');
  const after = await rows();
  t.equal(after.listed - before.listed, MAX_DROP_WARNINGS, 'the first drops are a warning each');
  const summary = after.summaries.filter((s) => !before.summaries.includes(s));
  t.same(
    summary.map((s) => JSON.parse(s) as unknown),
    [{ more: MAX_BATCH_ITEMS - 1 - MAX_DROP_WARNINGS, from_index: MAX_DROP_WARNINGS + 1 }],
    'the rest are one warning that counts them',
  );
  const kept = await w.rows(`SELECT distinct_id FROM events WHERE event = 'mem_kept'`);
  t.same(kept, [{ distinct_id: 'mem-1' }], 'the named event among them is stored');
});
