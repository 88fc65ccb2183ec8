/**
 * Weir as an operator runs it: `weir start` in its own process, first-start keys, `weir sql`, and SIGTERM
 * under load — every event that got a 200 is stored.
 */
import { readdirSync } from 'node:fs';
import t from 'tap';
import { PROJECT_API_KEY, runWeir, spawnWeir, tempDir, weirSql } from '../helpers/weir.ts';

t.test('a first start makes project 1 and tells its keys once; a restart keeps them', async (t) => {
  const dataDir = tempDir();
  const first = await spawnWeir(dataDir, {}, { bootstrapKeys: false });
  const key = /project API key:\s+(phc_\w+)/.exec(first.output())?.[1];
  const personal = /personal API key:\s+(phx_\w+)/.exec(first.output())?.[1];
  t.ok(key, 'the project API key is shown');
  t.ok(personal, 'the personal API key is shown');
  const res = await fetch(`${first.url}/i/v0/e/`, {
    method: 'POST',
    body: JSON.stringify({ api_key: key, event: 'first', distinct_id: 'x' }),
  });
  t.equal(res.status, 200, 'the shown key captures');
  first.child.kill('SIGTERM');
  t.equal(await first.exited, 0, 'SIGTERM exits 0');

  const second = await spawnWeir(dataDir, {}, { bootstrapKeys: false });
  t.notMatch(second.output(), /personal API key/, 'keys are not shown again');
  const again = await fetch(`${second.url}/i/v0/e/`, {
    method: 'POST',
    body: JSON.stringify({ api_key: key, event: 'second', distinct_id: 'x' }),
  });
  t.equal(again.status, 200, 'the key still works after a restart');
  second.child.kill('SIGTERM');
  t.equal(await second.exited, 0);

  const catalog = await import('node:fs').then((fs) => fs.readFileSync(`${dataDir}/catalog.json`, 'utf8'));
  t.notMatch(catalog, personal!, 'the personal key is stored hashed, not in clear');
});

t.test('weir sql refuses a data directory a running Weir holds, and reads it once stopped', async (t) => {
  const dataDir = tempDir();
  const weir = await spawnWeir(dataDir);
  await fetch(`${weir.url}/i/v0/e/`, {
    method: 'POST',
    body: JSON.stringify({ api_key: PROJECT_API_KEY, event: 'held', distinct_id: 'h' }),
  });
  const refused = await weirSql(dataDir, 'SELECT count() AS n FROM events');
  t.equal(refused.code, 1);
  t.match(refused.stderr, /held by a running Weir \(pid \d+\)/);
  weir.child.kill('SIGTERM');
  await weir.exited;
  const ok = await weirSql(dataDir, "SELECT event, distinct_id FROM events WHERE event = 'held'");
  t.equal(ok.code, 0, ok.stderr);
  t.same(
    ok.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as unknown),
    [{ event: 'held', distinct_id: 'h' }],
  );
});

t.test('a second Weir on a taken port refuses to start, before it makes anything', async (t) => {
  const first = await spawnWeir(tempDir());
  t.teardown(async () => {
    first.child.kill('SIGTERM');
    await first.exited;
  });
  const port = new URL(first.url).port;
  for (const threads of ['0', '1']) {
    const dataDir = tempDir();
    const { code, stderr } = await runWeir(['start'], {
      WEIR_PORT: port,
      WEIR_DATA_DIR: dataDir,
      WEIR_CAPTURE_THREADS: threads,
    });
    t.equal(code, 1, `exits 1 (capture threads: ${threads})`);
    t.match(stderr, `cannot listen on http://127.0.0.1:${port}: is the port in use?`);
    t.notMatch(stderr, /API key/, 'no keys were made that would never be shown again');
    t.same(readdirSync(dataDir), [], 'its data directory is left as it was');
  }
  const res = await fetch(`${first.url}/i/v0/e/`, {
    method: 'POST',
    body: JSON.stringify({ api_key: PROJECT_API_KEY, event: 'still mine', distinct_id: 'p' }),
  });
  t.equal(res.status, 200, 'the first Weir goes on taking events');
});

t.test('SIGTERM under load: every event answered 200 is stored, nothing else is', async (t) => {
  const dataDir = tempDir();
  const weir = await spawnWeir(dataDir);
  const acked = new Set<string>();
  let attempted = 0;
  let stop = false;
  const deadline = Date.now() + 20_000;

  const client = async (c: number): Promise<void> => {
    for (let i = 0; !stop && Date.now() < deadline; i++) {
      const ids = Array.from({ length: 20 }, (_, j) => `c${c}-r${i}-e${j}`);
      attempted += ids.length;
      const body = JSON.stringify({
        api_key: PROJECT_API_KEY,
        batch: ids.map((id) => ({ event: 'load', properties: { distinct_id: `client-${c}`, id } })),
      });
      try {
        const res = await fetch(`${weir.url}/batch/`, { method: 'POST', body });
        await res.text();
        if (res.status === 200) for (const id of ids) acked.add(id);
      } catch {
        stop = true; // the server closed: this request was not acknowledged
      }
    }
  };
  const clients = Array.from({ length: 8 }, (_, c) => client(c));
  // Let load build up, then stop the server while requests are in flight.
  while (acked.size < 2_000 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  weir.child.kill('SIGTERM');
  const code = await weir.exited;
  stop = true;
  await Promise.all(clients);
  t.equal(code, 0, 'drained and exited 0');
  t.ok(acked.size >= 2_000, `load was running (${acked.size} acknowledged of ${attempted} attempted)`);

  const res = await weirSql(
    dataDir,
    "SELECT JSONExtractString(properties, 'id') AS id FROM events WHERE event = 'load'",
  );
  t.equal(res.code, 0, res.stderr);
  const stored = res.stdout
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { id: string }).id);
  const storedSet = new Set(stored);
  const missing = [...acked].filter((id) => !storedSet.has(id));
  t.same(missing, [], 'no acknowledged event is lost');
  t.equal(stored.length, storedSet.size, 'no event is stored twice');
});
