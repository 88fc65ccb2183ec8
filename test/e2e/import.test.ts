/**
 * `weir import` as a user runs it: the command as a child process, against a real Weir on loopback, rows
 * read back from its store. Events of a historical export land with their timestamps and uuids, in file
 * order (each event's `$set` shows in the person properties stored with it, which needs the order kept);
 * a rerun, and a resume after the importer is killed, leave each event stored once.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import {
  LAUNCH_ENV,
  PROJECT_API_KEY,
  runWeir,
  startTestWeir,
  tempDir,
  waitFor,
  weirArgs,
} from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());
const dir = tempDir('weir-import-');

const BASE = Date.UTC(2023, 0, 1);

/** An export of `n` events of one event name: odd rows carry a uuid (PostHog's), even rows none (derived). */
function exportFile(name: string, event: string, n: number): string {
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    lines.push(
      JSON.stringify({
        event,
        distinct_id: `user-${i % 7}`,
        timestamp: new Date(BASE + i * 60_000).toISOString(),
        properties: { i, $set: { last_i: i } },
        ...(i % 2 === 1 ? { uuid: `0190a000-0000-7000-8000-${String(i).padStart(12, '0')}` } : {}),
        person_properties: { ignored: true },
      }),
    );
  }
  const path = join(dir, name);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

const importArgs = (file: string, ...more: string[]) => [
  'import',
  file,
  '--url',
  w.url,
  '--api-key',
  PROJECT_API_KEY,
  ...more,
];

interface Stored {
  i: number;
  uuid: string;
  ts: string;
  last_i: number;
}

async function stored(event: string): Promise<Stored[]> {
  const rows = await w.rows<{ i: string; uuid: string; ts: string; last_i: string }>(
    `SELECT JSONExtractInt(properties, 'i') AS i, toString(uuid) AS uuid,
            formatDateTime(timestamp, '%Y-%m-%dT%H:%i:%S.000Z', 'UTC') AS ts,
            JSONExtractInt(person_properties, 'last_i') AS last_i
     FROM events FINAL WHERE event = {event:String} ORDER BY i`,
    { event },
  );
  return rows.map((r) => ({ i: Number(r.i), uuid: r.uuid, ts: r.ts, last_i: Number(r.last_i) }));
}

async function rawCount(event: string): Promise<number> {
  const [r] = await w.rows<{ n: string }>(`SELECT count() AS n FROM events WHERE event = {event:String}`, {
    event,
  });
  return Number(r!.n);
}

t.test('an export lands in order, timestamps and uuids kept; a rerun stores each event once', async (t) => {
  const N = 3000;
  const file = exportFile('order.jsonl', 'imp_order', N);
  const first = await runWeir(importArgs(file, '--batch-size', '250'));
  t.equal(first.code, 0, first.stderr);
  t.match(first.stdout, /import completed[\s\S]*read\s+3000[\s\S]*stored\s+3000/);
  t.notOk(existsSync(`${file}.weir-import.json`), 'a finished import leaves no checkpoint');

  const rows = await waitFor(async () => {
    const r = await stored('imp_order');
    return r.length === N ? r : undefined;
  });
  const wrong = rows.filter(
    (r, k) =>
      r.i !== k ||
      r.ts !== new Date(BASE + k * 60_000).toISOString() ||
      (k % 2 === 1 && !r.uuid.endsWith(String(k).padStart(12, '0'))),
  );
  t.same(wrong.slice(0, 3), [], 'every row once, with its timestamp, and its uuid where it had one');
  // Each event's $set is applied in file order: the person properties stored with event i show last_i = i.
  t.same(rows.filter((r) => r.last_i !== r.i).slice(0, 3), [], 'person properties follow the file order');

  const again = await runWeir(importArgs(file, '--batch-size', '250'));
  t.equal(again.code, 0, again.stderr);
  const after = await stored('imp_order');
  t.equal(after.length, N, 'run twice, each event is stored once');
  t.same(
    after.map((r) => r.uuid),
    rows.map((r) => r.uuid),
    'derived uuids are the same on the second run',
  );
});

t.test('killed mid-import, the same command resumes and each event is stored once', async (t) => {
  const N = 4000;
  const file = exportFile('crash.jsonl.gz', 'imp_crash', 0);
  // A gzip file: the resume reads and skips rows rather than seeking.
  const { gzipSync } = await import('node:zlib');
  const lines = Array.from({ length: N }, (_, i) =>
    JSON.stringify({
      event: 'imp_crash',
      distinct_id: `c-${i % 13}`,
      timestamp: new Date(BASE + i * 1000).toISOString(),
      properties: { i },
    }),
  );
  writeFileSync(file, gzipSync(`${lines.join('\n')}\n`));
  const checkpoint = `${file}.weir-import.json`;
  // With the launch settings given, the process killed is the importer itself, not a launcher in front of it.
  const child = spawn(process.execPath, weirArgs(importArgs(file, '--batch-size', '100', '--rate', '2000')), {
    env: { ...process.env, ...LAUNCH_ENV },
    stdio: 'ignore',
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const cp = await waitFor(
    () =>
      Promise.resolve(
        existsSync(checkpoint)
          ? (JSON.parse(readFileSync(checkpoint, 'utf8')) as { row: number })
          : undefined,
      ),
    20_000,
    'a checkpoint',
  );
  child.kill('SIGKILL');
  await exited;
  t.ok(cp.row > 0 && cp.row < N, `killed part way (checkpoint at row ${cp.row})`);
  const partial = await rawCount('imp_crash');
  t.ok(partial < N, `not everything was sent before the kill (${partial} stored)`);

  const resumed = await runWeir(importArgs(file, '--batch-size', '100'));
  t.equal(resumed.code, 0, resumed.stderr);
  t.match(resumed.stdout, /resumed\s+from/);
  t.match(resumed.stderr, /resuming from/);
  const rows = await stored('imp_crash');
  t.equal(rows.length, N, 'each event stored once');
  t.same(rows.filter((r, k) => r.i !== k).slice(0, 3), [], 'none missing, none twice');
  t.notOk(existsSync(checkpoint));
});

t.test('bad rows go to the rejects file with reasons; --max-errors stops the import', async (t) => {
  const rows = [
    { event: 'imp_bad', distinct_id: 'b', timestamp: '2023-05-01T00:00:00Z', properties: { i: 0 } },
    'not json at all',
    { distinct_id: 'b', timestamp: '2023-05-01T00:00:01Z' },
    { event: 'imp_bad', timestamp: '2023-05-01T00:00:02Z' },
    { event: 'imp_bad', distinct_id: 'b', timestamp: 'yesterday-ish' },
    { event: 'imp_bad', distinct_id: 'b' },
    // Capture refuses this one (400 invalid_alias): the rest of its batch is still stored.
    { event: '$create_alias', distinct_id: 'b', timestamp: '2023-05-01T00:00:03Z', properties: {} },
    { event: 'imp_bad', distinct_id: 'b', timestamp: '2023-05-01T00:00:04Z', properties: { i: 1 } },
  ];
  const file = join(dir, 'bad.jsonl');
  writeFileSync(file, `${rows.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n')}\n`);
  const res = await runWeir(importArgs(file));
  t.equal(res.code, 0, res.stderr);
  t.match(res.stdout, /stored\s+2[\s\S]*refused\s+6/);
  const rejects = readFileSync(`${file}.rejects.jsonl`, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { row: number; reason: string });
  t.same(
    rejects.map((r) => [r.row, r.reason]),
    [
      [1, 'unreadable'],
      [2, 'missing_event'],
      [3, 'missing_distinct_id'],
      [4, 'invalid_timestamp'],
      [5, 'missing_timestamp'],
      [6, 'server:invalid_alias'],
    ],
  );
  t.equal((await stored('imp_bad')).length, 2);

  const stopped = await runWeir(importArgs(file, '--max-errors', '2', '--rejects', join(dir, 'r2.jsonl')));
  t.equal(stopped.code, 1);
  t.match(stopped.stderr, /stopped: more than 2 rows refused \(--max-errors\)/);
  t.equal(readFileSync(join(dir, 'r2.jsonl'), 'utf8').trim().split('\n').length, 3);
});

t.test('--dry-run checks every row and sends nothing', async (t) => {
  const file = exportFile('dry.jsonl', 'imp_dry', 500);
  writeFileSync(file, `${readFileSync(file, 'utf8')}{"event":"imp_dry"}\n`);
  const res = await runWeir(['import', file, '--dry-run']);
  t.equal(res.code, 0, res.stderr);
  t.match(
    res.stdout,
    /dry run: nothing sent[\s\S]*read\s+501[\s\S]*valid\s+500[\s\S]*missing_distinct_id\s+1/,
  );
  t.equal(await rawCount('imp_dry'), 0);
});
