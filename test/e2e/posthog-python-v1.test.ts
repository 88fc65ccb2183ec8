/**
 * The real posthog-python in Capture V1 mode (`capture_mode='v1'`) against a real Weir, in a python3 child
 * (test/fixtures/posthog-python/capture_v1.py): its events stored, each compression it offers undone, an
 * unknown key reaching its `on_error` as a 401, and `retry` results resent until the store takes them.
 * `.ci/run` and the README's test command install posthog-python with pip; where it is missing, or too old to
 * have Capture V1, the file says so and passes.
 */
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import { metricValue } from '../helpers/capture-bodies.ts';
import { fillUntilRefused } from '../helpers/capture-v1.ts';
import { PROJECT_API_KEY, startTestWeir, waitFor } from '../helpers/weir.ts';

const PYTHON = process.env['POSTHOG_PYTHON'] ?? 'python3';
const SCRIPT = join(import.meta.dirname, '../fixtures/posthog-python/capture_v1.py');
const V1_ROUTE = 'i/v1/analytics/events';

const probe = spawnSync(PYTHON, ['-c', 'import posthog.capture_v1, posthog; print(posthog.VERSION)'], {
  encoding: 'utf8',
});
const version = probe.status === 0 ? probe.stdout.trim() : undefined;

interface PythonErrors {
  errors: {
    type: string;
    status: number | string | null;
    message: string;
    drops: [string, string | null][];
    retry_exhausted: string[];
  }[];
}

interface PlannedEvent {
  event: string;
  distinct_id: string;
  uuid?: string;
  properties?: Record<string, unknown>;
}

function runPython(
  url: string,
  key: string,
  compression: string,
  maxRetries: number,
  events: PlannedEvent[],
): Promise<PythonErrors> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, [SCRIPT, url, key, compression, String(maxRetries), JSON.stringify(events)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      const last = out.trim().split('\n').pop() ?? '';
      if (code !== 0) reject(new Error(`python exited ${code}:\n${err}\n${out}`));
      else resolve(JSON.parse(last) as PythonErrors);
    });
  });
}

if (version === undefined) {
  // A client the suite cannot run is a failure, not a pass: the README's test command installs it.
  t.fail(`posthog-python with Capture V1 is not installed for ${PYTHON}: pip install 'posthog==7.53.0'`);
} else {
  t.comment(`posthog-python ${version}`);
  const w = await startTestWeir({ WEIR_STORE_MAX_PENDING_MB: '1' });
  t.teardown(() => w.close());

  const rowsOf = (event: string) =>
    w.rows<{ uuid: string; distinct_id: string; properties: string }>(
      `SELECT toString(uuid) AS uuid, distinct_id, properties FROM events WHERE event = {event:String}`,
      { event },
    );

  t.test('events are stored, with each compression, $lib from its header', async (t) => {
    for (const compression of ['none', 'gzip', 'deflate']) {
      const event = `py v1 ${compression}`;
      const uuid = `0190a1b2-c3d4-7e5f-8a9b-${Buffer.from(compression).toString('hex').padEnd(12, '0').slice(0, 12)}`;
      const result = await runPython(w.url, PROJECT_API_KEY, compression, 0, [
        { event, distinct_id: 'py-user', uuid, properties: { plan: 'pro', $session_id: 'py-sess' } },
        { event, distinct_id: 'py-user', properties: { $process_person_profile: false } },
      ]);
      t.same(result.errors, [], `${compression}: nothing on on_error`);
      const rows = await rowsOf(event);
      t.equal(rows.length, 2, `${compression}: both stored`);
      const mine = rows.find((r) => r.uuid === uuid);
      t.match(JSON.parse(mine?.properties ?? '{}'), {
        plan: 'pro',
        $lib: 'posthog-python',
        $lib_version: version,
        $session_id: 'py-sess',
      });
      const other = rows.find((r) => r.uuid !== uuid);
      t.equal(
        (JSON.parse(other?.properties ?? '{}') as Record<string, unknown>)['$process_person_profile'],
        false,
        `${compression}: the option comes back as its property`,
      );
    }
  });

  t.test('an unknown key: a 401 on on_error, nothing stored', async (t) => {
    const result = await runPython(w.url, 'phc_python_nobody', 'gzip', 3, [
      { event: 'py v1 nobody', distinct_id: 'py-nobody' },
    ]);
    t.equal(result.errors.length, 1);
    t.equal(result.errors[0]?.type, 'CaptureV1Error');
    t.equal(result.errors[0]?.status, 401);
    t.match(result.errors[0]?.message, /names no project/, 'error_description is the message');
    t.equal((await rowsOf('py v1 nobody')).length, 0);
  });

  t.test('retry results while the store refuses, resent until it takes them', async (t) => {
    await w.weir.store.command('RENAME TABLE events TO events_away');
    let renamedBack = false;
    const renameBack = async (): Promise<void> => {
      if (renamedBack) return;
      renamedBack = true;
      await w.weir.store.command('RENAME TABLE events_away TO events');
    };
    t.teardown(renameBack);
    const full = await fillUntilRefused(w.url, 'py filler');
    t.ok(full, 'the store stopped taking events');

    const before = await metricValue(w.url, 'weir_capture_requests_total', {
      route: V1_ROUTE,
      status: '200',
    });
    const uuids = ['0190a1b2-c3d4-7e5f-8a9b-0000000000c1', '0190a1b2-c3d4-7e5f-8a9b-0000000000c2'];
    const running = runPython(
      w.url,
      PROJECT_API_KEY,
      'gzip',
      4,
      uuids.map((uuid) => ({ event: 'py v1 retried', distinct_id: 'py-retried', uuid })),
    );
    // Its first attempt is answered (retry, while the store refuses); then the store recovers.
    await waitFor(
      async () =>
        (await metricValue(w.url, 'weir_capture_requests_total', { route: V1_ROUTE, status: '200' })) > before
          ? true
          : undefined,
      20_000,
      "python's first attempt",
    );
    await renameBack();
    const result = await running;
    t.same(result.errors, [], 'nothing on on_error: the retried events were taken');
    const attempts =
      (await metricValue(w.url, 'weir_capture_requests_total', { route: V1_ROUTE, status: '200' })) - before;
    t.ok(attempts >= 2, `resent after the retry (${attempts} attempts)`);
    t.same((await rowsOf('py v1 retried')).map((r) => r.uuid).sort(), uuids, 'each stored exactly once');
  });
}
