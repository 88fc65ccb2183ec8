/**
 * The embedded store on real chDB: a commit is visible to the next query, what a crash left in the commit
 * log is applied at the next open exactly once, and a store that cannot apply refuses new rows past its bound
 * and loses none it took. (What every store does with a row the engine refuses: store-contract.test.ts.)
 */
import { appendFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createLogger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import { embeddedMergeThreads } from '../../src/store/embedded/chdb-client.ts';
import { CommitLog, type LogFrame, type LogPosition } from '../../src/store/embedded/commit-log.ts';
import { blockToken, type LoggedStore } from '../../src/store/embedded/logged-store.ts';
import { type EmbeddedStoreConfig, openEmbeddedStore } from '../../src/store/embedded/open-embedded-store.ts';
import { StoreBusyError } from '../../src/store/store-errors.ts';
import type { Row } from '../../src/core/ports.ts';
import { eventRows } from '../helpers/rows.ts';

const dataDir = await mkdtemp(join(tmpdir(), 'weir-logged-store-'));
t.teardown(() => rm(dataDir, { recursive: true, force: true }));
const logDir = join(dataDir, 'commit-log');
const metrics = new Metrics({ defaultMetrics: false });
const deps = { logger: createLogger('silent'), metrics };
// A long apply interval: anything visible before it passed was applied because a read asked for it.
const config: EmbeddedStoreConfig = {
  dataDir,
  storeFsync: true,
  storeMaxPendingMb: 256,
  storeApplyIntervalMs: 60_000,
};

let store: LoggedStore = await openEmbeddedStore(config, deps);
t.teardown(() => store.close());

async function reopen(overrides: Partial<EmbeddedStoreConfig> = {}): Promise<void> {
  await store.close();
  store = await openEmbeddedStore({ ...config, ...overrides }, deps);
}

async function count(tag: string): Promise<{ rows: number; distinct: number }> {
  const [r] = await store.query<{ rows: string; distinct: string }>(
    `SELECT count() AS rows, uniqExact(uuid) AS distinct FROM events WHERE event = {tag:String}`,
    { tag },
  );
  return { rows: Number(r!.rows), distinct: Number(r!.distinct) };
}

t.test('the engine merges on one thread fewer than the cores, at most two, at least one', async (t) => {
  t.same([1, 2, 3, 4, 16].map(embeddedMergeThreads), [1, 1, 2, 2, 2]);
  const poolSize = async (): Promise<number> => {
    const [r] = await store.query<{ value: string }>(
      `SELECT value FROM system.server_settings WHERE name = 'background_pool_size'`,
    );
    return Number(r!.value);
  };
  const expected = embeddedMergeThreads(availableParallelism());
  t.equal(await poolSize(), expected);
  await reopen();
  t.equal(await poolSize(), expected, 'and again after the store is closed and opened');
});

t.test('a block of events past the engine default of 10 MB is applied as one compact part', async (t) => {
  await store.command('SYSTEM STOP MERGES events');
  t.teardown(() => store.command('SYSTEM START MERGES events'));
  const big = 'x'.repeat(10_000);
  // ~12 MB: wide at ClickHouse's default, compact under migration 5's 32 MiB.
  const rows = eventRows('compact', 1_200).map((r) => ({ ...r, properties: JSON.stringify({ big }) }));
  await store.insert('events', rows);
  t.same(await count('compact'), { rows: 1_200, distinct: 1_200 });
  const parts = await store.query<{ part_type: string; rows: string }>(
    `SELECT part_type, rows FROM system.parts WHERE active AND table = 'events' AND rows = 1200`,
  );
  t.same(parts, [{ part_type: 'Compact', rows: '1200' }]);
});

t.test(
  'with WEIR_STORE_FSYNC every table syncs its parts, inserted and merged, before they count',
  async (t) => {
    const tables = await store.query<{ name: string; engine_full: string }>(
      "SELECT name, engine_full FROM system.tables WHERE database = currentDatabase() AND engine LIKE '%MergeTree'",
    );
    t.ok(tables.length >= 8, `${tables.length} tables`);
    for (const { name, engine_full } of tables)
      t.match(
        engine_full,
        /fsync_after_insert = 1, fsync_part_directory = 1, min_compressed_bytes_to_fsync_after_merge = 1/,
        name,
      );
  },
);

t.test('a committed row is visible to the very next query', async (t) => {
  await store.insert('events', eventRows('visible', 3));
  t.same(await count('visible'), { rows: 3, distinct: 3 });
});

t.test('rows a crash left in the commit log are applied at the next open', async (t) => {
  await store.close();
  // What a process that died after committing leaves behind: frames in the log, not in the tables.
  const { log } = await CommitLog.open({ dir: logDir, fsync: true });
  const lines = eventRows('left-behind', 5).map((r) => `${JSON.stringify(r)}\n`);
  await log.append('events', 5, Buffer.from(lines.join('')));
  await log.close();
  store = await openEmbeddedStore(config, deps);
  t.same(await count('left-behind'), { rows: 5, distinct: 5 });
});

/**
 * Appends what `write` does to the log of the closed store, opens the store (it applies the block and marks
 * it), then puts the mark back to "in progress", as if the process had died between the inserts and the
 * mark, and opens it again: the block is applied a second time, under the same tokens. `check` runs after
 * each open.
 */
async function applyTwice(
  write: (log: CommitLog) => Promise<LogFrame>,
  check: (when: string) => Promise<unknown>,
): Promise<void> {
  await store.close();
  const statePath = join(logDir, 'state.json');
  const before = JSON.parse(await readFile(statePath, 'utf8')) as { logId: string; applied: LogPosition };
  const { log } = await CommitLog.open({ dir: logDir, fsync: true });
  const last = await write(log);
  await log.close();
  store = await openEmbeddedStore(config, deps);
  await check('applied and marked');
  await store.close();
  const from = before.applied;
  await writeFile(
    statePath,
    JSON.stringify({
      logId: before.logId,
      applied: from,
      intent: { from, to: last.end, token: blockToken(before.logId, from, last.end) },
    }),
  );
  store = await openEmbeddedStore(config, deps);
  await check('re-applied under the same tokens');
}

t.test('a block applied just before a crash, but not yet marked, is not stored twice', async (t) => {
  const lines = eventRows('applied-twice', 4).map((r) => `${JSON.stringify(r)}\n`);
  await applyTwice(
    (log) => log.append('events', 4, Buffer.from(lines.join(''))),
    async (when) => t.same(await count('applied-twice'), { rows: 4, distinct: 4 }, when),
  );
});

t.test('a torn write at the tail of the log is cut off and the rest applied', async (t) => {
  await store.close();
  const { log } = await CommitLog.open({ dir: logDir, fsync: true });
  const lines = eventRows('before-tear', 2).map((r) => `${JSON.stringify(r)}\n`);
  const frame = await log.append('events', 2, Buffer.from(lines.join('')));
  await log.close();
  await appendFile(
    join(logDir, `${String(frame.end.segment).padStart(20, '0')}.log`),
    Buffer.from([0xff, 0x00, 0x00, 0x00, 1, 2, 3]),
  );
  store = await openEmbeddedStore(config, deps);
  t.same(await count('before-tear'), { rows: 2, distinct: 2 });
});

/** Rows as values, in the order of their first row's keys, and those keys. */
function asValues(rows: readonly Row[]): { columns: string[]; values: unknown[][] } {
  const columns = Object.keys(rows[0]!);
  return { columns, values: rows.map((r) => columns.map((c) => r[c])) };
}

t.test('rows given as values are stored, beside rows given as objects in the same block', async (t) => {
  const { columns, values } = asValues(eventRows('as-values', 6));
  // Left out of the column list: `$group_0` takes its default.
  t.notOk(columns.includes('$group_0'));
  const objects = eventRows('as-objects', 3);
  // One block: both are committed before the read applies them (the interval is a minute).
  await Promise.all([store.insertValues('events', columns, values), store.insert('events', objects)]);
  t.same(await count('as-values'), { rows: 6, distinct: 6 });
  t.same(await count('as-objects'), { rows: 3, distinct: 3 });
  const stored = await store.query<Row>(
    `SELECT uuid, distinct_id, properties, $group_0 FROM events WHERE event = 'as-values' ORDER BY distinct_id`,
  );
  t.same(
    stored,
    values.map((v) => ({ uuid: v[1], distinct_id: v[3], properties: v[6], $group_0: '' })),
  );
});

t.test('a block of values and objects re-applied after a crash is stored once', async (t) => {
  const { columns, values } = asValues(eventRows('mixed-twice', 4));
  const objects = eventRows('mixed-twice', 2, 4);
  await applyTwice(
    async (log) => {
      await log.append('events', 4, Buffer.from(JSON.stringify(values)), columns);
      return log.append('events', 2, Buffer.from(JSON.stringify(objects)));
    },
    async (when) => t.same(await count('mixed-twice'), { rows: 6, distinct: 6 }, when),
  );
});

t.test('a store that cannot apply refuses rows past its bound and loses none it took', async (t) => {
  await reopen({ storeMaxPendingMb: 1 });
  await store.command('RENAME TABLE events TO events_away');
  let accepted = 0;
  let busy: unknown;
  const big = 'x'.repeat(20_000);
  for (let i = 0; i < 200 && busy === undefined; i++) {
    const rows = eventRows('behind', 10, i * 10).map((r) => ({ ...r, properties: JSON.stringify({ big }) }));
    try {
      await store.insert('events', rows);
      accepted += rows.length;
    } catch (err) {
      busy = err;
    }
  }
  t.ok(busy instanceof StoreBusyError, 'past the bound, inserts are refused');
  t.ok(accepted > 0, `rows were taken before the bound (${accepted})`);
  await t.rejects(count('behind'), 'a read fails rather than miss committed rows');
  await store.command('RENAME TABLE events_away TO events');
  t.same(await count('behind'), { rows: accepted, distinct: accepted }, 'every row taken is stored once');
  const segments = (await readdir(logDir)).filter((f) => f.endsWith('.log'));
  t.ok(segments.length <= 2, `applied segments are removed (${segments.length} left)`);
});

t.test('the store applies what waits once it is half its bound, not only at its interval', async (t) => {
  // Past the bound inserts are refused: a store that waited for its interval (a minute here) with the bound
  // nearly reached would refuse rows it could have applied.
  await reopen({ storeMaxPendingMb: 1 });
  const big = 'x'.repeat(10_000);
  let taken = 0;
  for (let i = 0; i < 6; i++) {
    // ~100 KB each: 600 KB in all, past half of the 1 MiB bound and under the bound itself.
    const rows = eventRows('half-bound', 10, i * 10).map((r) => ({
      ...r,
      properties: JSON.stringify({ big }),
    }));
    await store.insert('events', rows);
    taken += rows.length;
  }
  // `fresh: false` reads the tables as they are, without applying the log first.
  const applied = async (): Promise<number> => {
    const [r] = await store.query<{ n: string }>(
      `SELECT count() AS n FROM events WHERE event = 'half-bound'`,
      {},
      { fresh: false },
    );
    return Number(r!.n);
  };
  const deadline = Date.now() + 10_000;
  let seen = await applied();
  while (seen < taken && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    seen = await applied();
  }
  t.equal(seen, taken, 'every row reached the tables without a read asking');
});

t.test('a commit log started afresh never has its blocks taken for ones the tables remember', async (t) => {
  // The first block of this file was 3 'visible' rows at the very start of the log. Remove the log (the tables
  // stay) and commit a block of exactly that size again: it sits at the same positions, and only the log's
  // own id keeps its deduplication token from matching the old block's.
  await store.close();
  await rm(logDir, { recursive: true, force: true });
  store = await openEmbeddedStore(config, deps);
  await store.insert('events', eventRows('visible', 3));
  t.same(await count('visible'), { rows: 6, distinct: 6 });
});

t.test('blocks reach the tables through files that are gone once applied, whatever the path', async (t) => {
  // The engine reads each block from a file (INSERT … FROM INFILE): a quote or a backslash in the data
  // directory's path must not break the statement, and no file may stay behind.
  const oddDir = await mkdtemp(join(tmpdir(), "weir it's a \\ path-"));
  t.teardown(() => rm(oddDir, { recursive: true, force: true }));
  await store.close(); // chDB has one data directory per process
  const odd = await openEmbeddedStore({ ...config, dataDir: oddDir }, deps);
  try {
    await odd.insert('events', eventRows('odd path', 4));
    const [r] = await odd.query<{ n: string }>(`SELECT count() AS n FROM events WHERE event = 'odd path'`);
    t.equal(Number(r!.n), 4);
    t.same(await readdir(join(oddDir, 'chdb', 'weir-inserts')), [], 'no block file left');
  } finally {
    await odd.close();
    store = await openEmbeddedStore(config, deps);
  }
});
