/**
 * `npm run bench:retention [-- --days N] [--per-day N] [--retention N] [--modes merges,purge,optimize]`:
 * disk use of the events table under a project's event retention on a moving window. The data directory is
 * opened as `weir start` opens it (catalog and embedded store, real chDB); for each simulated day (default
 * 30) a day's events (default 300,000, timestamps on that day, in four inserts) are written by the engine,
 * the retention sweep (src/lifecycle/retention.ts, retention 7 days) runs as of the day's end, and the
 * merges the engine starts are let finish; then the table is measured (disk.ts). Modes, each from an empty
 * table: `purge`, as Weir sweeps (its deletes, then `Store.purgeDeleted` of each table it deleted from);
 * `merges`, the purge skipped, the deleted rows left to merges, as sweeps ran before; `optimize`, the purge
 * skipped and `OPTIMIZE TABLE events FINAL` after each sweep that deleted. Prints a table per
 * mode and writes bench/results/retention-<time>.json and bench/results/retention.svg.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import type { Store } from '../../src/core/ports.ts';
import { RetentionSweeper } from '../../src/lifecycle/retention.ts';
import { openDataDir } from '../../src/roles/owner.ts';
import { Teardown } from '../../src/roles/teardown.ts';
import { renderText, type Table } from '../capture/report.ts';
import { diskPlot } from './disk-plot.ts';
import { mb, outdatedRemoved, tableDisk, type TableDisk } from './disk.ts';
import { benchRun } from './report.ts';

const MODES = ['merges', 'purge', 'optimize'] as const;
type Mode = (typeof MODES)[number];

const { values } = parseArgs({
  options: {
    days: { type: 'string', default: '30' },
    'per-day': { type: 'string', default: '300000' },
    retention: { type: 'string', default: '7' },
    modes: { type: 'string', default: 'merges,purge' },
  },
});
const DAYS = Number(values.days);
const PER_DAY = Number(values['per-day']);
const RETENTION = Number(values.retention);
const modes = values.modes.split(',') as Mode[];
for (const m of modes) if (!MODES.includes(m)) throw new Error(`unknown mode ${m}`);
const INSERTS_PER_DAY = 4;
const DAY_MS = 86_400_000;
const START = Date.UTC(2026, 0, 1);
/** A simulated day is seconds long: the merges it starts are given up to this long to finish. */
const SETTLE_DEADLINE_MS = 60_000;
const run = benchRun('retention');

const logger = createLogger('silent');
const dir = mkdtempSync(join(tmpdir(), 'weir-bench-retention-'));
const config = loadConfig({
  WEIR_PORT: '0',
  WEIR_DATA_DIR: join(dir, 'data'),
  WEIR_BOOTSTRAP_PROJECT_API_KEY: 'phc_bench_retention_key_000000000000000000000',
  WEIR_LOG_LEVEL: 'silent',
});
const teardown = new Teardown(logger);
const { catalog, store } = await openDataDir(config, { logger, metrics: new Metrics() }, teardown);
// Not started: the bench calls the sweep itself, as of each simulated day's end.
const purgeDeleted = store.purgeDeleted.bind(store);
const sweeper = new RetentionSweeper({ intervalMs: DAY_MS }, { catalog, store, logger });

interface Day extends TableDisk {
  readonly day: number;
  readonly deleted: number;
  readonly insertMs: number;
  readonly sweepMs: number;
  /** The OPTIMIZE after the sweep (`optimize`); the purge is in the sweep's time. */
  readonly reclaimMs: number;
  readonly settleMs: number | undefined;
}

async function insertDay(s: Store, day: number): Promise<void> {
  const per = PER_DAY / INSERTS_PER_DAY;
  for (let i = 0; i < INSERTS_PER_DAY; i++) {
    const from = day * PER_DAY + i * per;
    await s.command(`
      INSERT INTO events (project_id, uuid, event, distinct_id, person_id, timestamp, properties, person_mode, created_at)
      SELECT 1, reinterpretAsUUID(cityHash64(number, 'uuid')),
        ['$pageview', '$pageview', '$autocapture', 'signed up', '$pageleave'][1 + cityHash64(number, 'event') % 5],
        concat('user-', toString(cityHash64(number, 'person') % 100000)),
        reinterpretAsUUID(toUInt128(cityHash64(number, 'person') % 100000 + 1)),
        fromUnixTimestamp64Milli(toInt64(${START + day * DAY_MS} + intDiv((number - ${day * PER_DAY}) * ${DAY_MS}, ${PER_DAY})), 'UTC') AS timestamp,
        concat('{"$browser":"', ['Chrome', 'Safari', 'Firefox'][1 + cityHash64(number, 'browser') % 3],
          '","$current_url":"https://example.com/page/', toString(cityHash64(number, 'url') % 500),
          '","$session_id":"s-', toString(cityHash64(number, 'session') % 2000000), '"}'),
        'full', timestamp
      FROM numbers(${from}, ${per})`);
  }
}

/** Polls until no merge or mutation of the table runs (twice in a row, a second apart), or the deadline. */
async function settled(s: Store): Promise<number | undefined> {
  const started = performance.now();
  let quiet = 0;
  while (quiet < 2) {
    if (performance.now() - started > SETTLE_DEADLINE_MS) return undefined;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const [r] = await s.query<{ n: string }>(
      `SELECT (SELECT count() FROM system.merges WHERE database = currentDatabase() AND table = 'events')
        + (SELECT count() FROM system.mutations WHERE database = currentDatabase() AND table = 'events' AND NOT is_done) AS n`,
    );
    quiet = Number(r?.n ?? 0) === 0 ? quiet + 1 : 0;
  }
  return performance.now() - started;
}

async function runMode(mode: Mode): Promise<Day[]> {
  // Each mode from an empty table; TRUNCATE removes the parts at once.
  await store.command('TRUNCATE TABLE events SYNC');
  await outdatedRemoved(store, 'events', SETTLE_DEADLINE_MS);
  const days: Day[] = [];
  // The sweep purges what it deleted (as Weir runs it); `merges` measures it without, as it ran before.
  store.purgeDeleted = mode === 'purge' ? purgeDeleted : () => Promise.resolve();
  for (let day = 0; day < DAYS; day++) {
    let t = performance.now();
    await insertDay(store, day);
    const insertMs = performance.now() - t;
    t = performance.now();
    const done = await sweeper.sweep(START + (day + 1) * DAY_MS);
    const sweepMs = performance.now() - t;
    const deleted = done.get(1)?.['events'] ?? 0;
    t = performance.now();
    if (deleted > 0 && mode === 'optimize') await store.command('OPTIMIZE TABLE events FINAL');
    const reclaimMs = performance.now() - t;
    const settleMs = await settled(store);
    const disk = await tableDisk(store, 'events');
    days.push({ day: day + 1, deleted, insertMs, sweepMs, reclaimMs, settleMs, ...disk });
    process.stderr.write(
      `${mode} day ${day + 1}: ${disk.rows} rows (${disk.storedRows} stored), active ${mb(disk.activeBytes)} MB, du ${mb(disk.duBytes)} MB\n`,
    );
  }
  return days;
}

const s = (ms: number | undefined): string => (ms === undefined ? '–' : (ms / 1000).toFixed(2));

function table(mode: Mode, days: readonly Day[]): Table {
  return {
    title: `Retention ${RETENTION} days, ${PER_DAY.toLocaleString('en')} events a day: ${mode}`,
    header: [
      'day',
      'deleted',
      'rows',
      'rows stored',
      'active parts',
      'active MB',
      'replaced MB',
      'du MB',
      'sweep s',
      'reclaim s',
    ],
    rows: days.map((d) => [
      String(d.day),
      String(d.deleted),
      String(d.rows),
      String(d.storedRows),
      String(d.activeParts),
      mb(d.activeBytes),
      mb(d.outdatedBytes),
      mb(d.duBytes),
      s(d.sweepMs),
      mode === 'optimize' ? s(d.reclaimMs) : '–',
    ]),
  };
}

try {
  await catalog.updateProject(1, { eventRetentionDays: RETENTION });
  const results: Partial<Record<Mode, Day[]>> = {};
  for (const mode of modes) results[mode] = await runMode(mode);
  const written = run.write({
    days: DAYS,
    perDay: PER_DAY,
    retentionDays: RETENTION,
    results,
  });
  const series = modes.flatMap((m) => [
    { name: `${m}: du`, points: results[m]!.map((d) => [d.day, d.duBytes] as const), dashed: false },
    { name: `${m}: active`, points: results[m]!.map((d) => [d.day, d.activeBytes] as const), dashed: true },
  ]);
  writeFileSync(
    new URL('../results/retention.svg', import.meta.url),
    diskPlot(
      `events on disk, retention ${RETENTION} days, ${PER_DAY.toLocaleString('en')} events a day`,
      series,
    ),
  );
  for (const m of modes) process.stdout.write(`${renderText(table(m, results[m]!))}\n\n`);
  process.stdout.write(`wrote ${written} and bench/results/retention.svg\n`);
} finally {
  await teardown.run();
  rmSync(dir, { recursive: true, force: true });
}
