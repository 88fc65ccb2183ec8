/**
 * `npm run bench:erasure [-- --events N] [--persons N] [--bulk N]`: time to erasure (issue 43) on the
 * embedded store. Weir runs in this process (real chDB, real HTTP on loopback) over N events (default 10M) of
 * one project across `--persons` persons (default 100,000), written by the engine itself as the query
 * benchmarks write theirs (`INSERT … SELECT FROM numbers`), then merged to rest. Through the API, one person
 * is deleted with its events (`DELETE …/persons/{uuid}/?delete_events=true`) and `--bulk` persons (default
 * 100) by distinct id (`POST …/persons/bulk_delete/`), each polled at `GET …/deletions/{id}/` until done:
 * first with the purge (`Store.purgeDeleted`, ALTER TABLE … APPLY DELETED MASK) as Weir runs it, then with it
 * skipped, as erasure was before it. For each: the time from the request to `done`, the time of each table's
 * delete and purge, and the events table on disk before, at `done`, and once the engine has removed the
 * replaced parts. Prints the figures and writes bench/results/erasure-<time>.json.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/core/logger.ts';
import { startWeir } from '../../src/main.ts';
import { renderText, type Table } from '../capture/report.ts';
import { mb, outdatedRemoved, tableDisk, type TableDisk } from './disk.ts';
import { benchRun } from './report.ts';

const KEY = 'phx_bench_erasure_key_00000000000000000000000';
const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '10000000' },
    persons: { type: 'string', default: '100000' },
    bulk: { type: 'string', default: '100' },
  },
});
const EVENTS = Number(values.events);
const PERSONS = Number(values.persons);
const BULK = Number(values.bulk);
const DONE_DEADLINE_MS = 600_000;
/**
 * How long to watch for the engine to remove the replaced parts: it does some tens of seconds after a merge
 * or mutation, and later the longer the table has been idle (measured: 34 s, then past 100 s).
 */
const CLEANUP_DEADLINE_MS = 60_000;
const run = benchRun('erasure');

const dir = mkdtempSync(join(tmpdir(), 'weir-bench-erasure-'));
const config = loadConfig({
  WEIR_PORT: '0',
  WEIR_DATA_DIR: join(dir, 'data'),
  WEIR_BOOTSTRAP_PERSONAL_API_KEY: KEY,
  WEIR_LOG_LEVEL: 'silent',
});
const weir = await startWeir(config, createLogger(process.env['WEIR_BENCH_LOG_LEVEL'] ?? 'silent'));
const store = weir.store;
const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };

/** Person n's uuid, as the generated rows carry it. */
const personSql = (n: string): string => `reinterpretAsUUID(toUInt128(${n} + 1))`;

/** Events over the 30 days before now, in time-ordered inserts as ingestion writes them; person n has `user-n`. */
async function generate(): Promise<void> {
  const chunks = 10;
  const per = Math.ceil(EVENTS / chunks);
  const span = 30 * 86_400_000;
  const end = Date.now();
  for (let c = 0; c < chunks; c++) {
    const from = c * per;
    const count = Math.min(per, EVENTS - from);
    await store.command(`
      INSERT INTO events (project_id, uuid, event, distinct_id, person_id, timestamp, properties, person_mode, created_at)
      SELECT 1, reinterpretAsUUID(cityHash64(number, 'uuid')),
        ['$pageview', '$pageview', '$autocapture', 'signed up', '$pageleave'][1 + cityHash64(number, 'event') % 5],
        concat('user-', toString(cityHash64(number, 'person') % ${PERSONS})),
        ${personSql(`cityHash64(number, 'person') % ${PERSONS}`)},
        fromUnixTimestamp64Milli(toInt64(${end - span} + intDiv(number * ${span}, ${EVENTS})), 'UTC') AS timestamp,
        concat('{"$browser":"', ['Chrome', 'Safari', 'Firefox'][1 + cityHash64(number, 'browser') % 3],
          '","$current_url":"https://example.com/page/', toString(cityHash64(number, 'url') % 500),
          '","$session_id":"s-', toString(cityHash64(number, 'session') % 2000000), '"}'),
        'full', timestamp
      FROM numbers(${from}, ${count})`);
  }
  await store.command(`
    INSERT INTO persons (project_id, id, properties, is_identified, created_at, version)
    SELECT 1, ${personSql('number')}, concat('{"email":"user', toString(number), '@example.com"}'), 1,
      now64(6), 1
    FROM numbers(${PERSONS})`);
  await store.command(`
    INSERT INTO person_distinct_ids (project_id, distinct_id, person_id, version)
    SELECT 1, concat('user-', toString(number)), ${personSql('number')}, 1 FROM numbers(${PERSONS})`);
}

/** Each call of a store member the erasure makes, timed: the steps of one deletion. */
interface Step {
  readonly step: string;
  readonly table: string;
  readonly ms: number;
}

/** The store's own delete and purge, before `instrument` replaces them. */
const original = { deleteRows: store.deleteRows.bind(store), purgeDeleted: store.purgeDeleted.bind(store) };

/**
 * Times the store's deletes and purges as the deletion runner makes them (the runner holds this same store
 * object); with `purge` false the purge is skipped, as erasure ran before it.
 */
function instrument(steps: Step[], purge: boolean): void {
  const timed = async (step: string, table: string, run: () => Promise<void>): Promise<void> => {
    const t = performance.now();
    await run();
    steps.push({ step, table, ms: performance.now() - t });
  };
  store.deleteRows = (table, where, params) =>
    timed('delete', table, () => original.deleteRows(table, where, params));
  store.purgeDeleted = (table) =>
    timed(purge ? 'purge' : 'purge skipped', table, () =>
      purge ? original.purgeDeleted(table) : Promise.resolve(),
    );
}

interface DeletionJson {
  readonly id: string;
  readonly status: string;
  readonly counts: Record<string, number> | null;
  readonly started_at?: string | null;
  readonly finished_at?: string | null;
}

interface Erasure {
  readonly name: string;
  readonly purge: boolean;
  readonly persons: number;
  readonly counts: Record<string, number> | null;
  /** From the request to the poll that saw `done`. */
  readonly doneMs: number;
  /** From the request to the first poll that saw it `running`. */
  readonly startMs: number | undefined;
  readonly steps: readonly Step[];
  /** Rows of the erased persons the events table's parts still hold (masked or not). */
  readonly storedBefore: number;
  readonly storedAtDone: number;
  readonly before: TableDisk;
  readonly atDone: TableDisk;
  /** After the engine removed the replaced parts (or at the deadline). */
  readonly settled: TableDisk;
  readonly cleanupMs: number | undefined;
  /** The longest a one-row query on the store's own connection (as ingest's person lookups use) waited. */
  readonly storeCallMaxMs: number;
}

/** Calls the store's own connection every 100 ms until `stop`; the longest call, in ms. */
function probeStore(): { stop: () => Promise<number> } {
  let running = true;
  let max = 0;
  const loop = (async () => {
    while (running) {
      const t = performance.now();
      await store.query('SELECT 1 AS one');
      max = Math.max(max, performance.now() - t);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return max;
    },
  };
}

async function storedOf(ids: readonly string[]): Promise<number> {
  const [r] = await store.query<{ n: string }>(
    'SELECT count() AS n FROM events WHERE distinct_id IN {ids:Array(String)} SETTINGS apply_deleted_mask = 0',
    { ids },
  );
  return Number(r?.n ?? 0);
}

async function erase(name: string, purge: boolean, first: number, count: number): Promise<Erasure> {
  const ids = Array.from({ length: count }, (_, i) => `user-${first + i}`);
  const steps: Step[] = [];
  instrument(steps, purge);
  const before = await tableDisk(store, 'events');
  const storedBefore = await storedOf(ids);
  let request: Promise<Response>;
  const probe = probeStore();
  const t = performance.now();
  if (count === 1) {
    const [p] = await store.query<{ id: string }>(`SELECT toString(${personSql(String(first))}) AS id`);
    request = fetch(`${weir.url}/api/projects/1/persons/${p!.id}/?delete_events=true`, {
      method: 'DELETE',
      headers,
    });
  } else {
    request = fetch(`${weir.url}/api/projects/1/persons/bulk_delete/`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ distinct_ids: ids, delete_events: true }),
    });
  }
  const res = await request;
  const accepted = (await res.json()) as DeletionJson;
  if (res.status !== 202) throw new Error(`${name}: ${res.status} ${JSON.stringify(accepted)}`);
  let startMs: number | undefined;
  let done: DeletionJson | undefined;
  while (!done) {
    if (performance.now() - t > DONE_DEADLINE_MS) throw new Error(`${name}: not done in time`);
    const d = (await (
      await fetch(`${weir.url}/api/projects/1/deletions/${accepted.id}/`, { headers })
    ).json()) as DeletionJson;
    if (d.status !== 'queued') startMs ??= performance.now() - t;
    if (d.status === 'done') done = d;
    else await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const doneMs = performance.now() - t;
  const storeCallMaxMs = await probe.stop();
  const atDone = await tableDisk(store, 'events');
  const storedAtDone = await storedOf(ids);
  const cleanupMs = await outdatedRemoved(store, 'events', CLEANUP_DEADLINE_MS);
  const settled = await tableDisk(store, 'events');
  return {
    name,
    purge,
    persons: count,
    counts: done.counts,
    doneMs,
    startMs,
    steps,
    storedBefore,
    storedAtDone,
    before,
    atDone,
    settled,
    cleanupMs,
    storeCallMaxMs,
  };
}

const s = (ms: number | undefined): string => (ms === undefined ? '–' : (ms / 1000).toFixed(2));

function table(runs: readonly Erasure[]): Table {
  return {
    title: `Erasure of ${EVENTS.toLocaleString('en')} events, ${PERSONS.toLocaleString('en')} persons`,
    header: [
      'run',
      'events erased',
      'to done s',
      'events delete s',
      'events purge s',
      'rows on disk before → at done',
      'active MB before → at done',
      'du MB before → at done → settled',
      'settled after s',
      'store call max ms',
    ],
    rows: runs.map((r) => {
      const of = (step: string): number | undefined =>
        r.steps.find((x) => x.step === step && x.table === 'events')?.ms;
      return [
        r.name,
        String(r.counts?.['events'] ?? '?'),
        s(r.doneMs),
        s(of('delete')),
        r.purge ? s(of('purge')) : 'skipped',
        `${r.storedBefore} → ${r.storedAtDone}`,
        `${mb(r.before.activeBytes)} → ${mb(r.atDone.activeBytes)}`,
        `${mb(r.before.duBytes)} → ${mb(r.atDone.duBytes)} → ${mb(r.settled.duBytes)}`,
        s(r.cleanupMs),
        r.storeCallMaxMs.toFixed(0),
      ];
    }),
  };
}

try {
  process.stderr.write(`generating ${EVENTS.toLocaleString('en')} events…\n`);
  let t = performance.now();
  await generate();
  const generateMs = performance.now() - t;
  // At rest, as a table that has been merged for a while: one part to rewrite, and no replaced parts in du.
  t = performance.now();
  await store.command('OPTIMIZE TABLE events FINAL');
  const optimizeMs = performance.now() - t;
  await outdatedRemoved(store, 'events', CLEANUP_DEADLINE_MS);
  const rest = await tableDisk(store, 'events');
  process.stderr.write(
    `generated in ${s(generateMs)} s, merged in ${s(optimizeMs)} s: ${rest.rows} events, ${mb(rest.activeBytes)} MB\n`,
  );
  // With the purge first: the runs without it then start from parts that hold no masked rows, and leave
  // their own masked rows behind, which is what they measure.
  const runs: Erasure[] = [];
  const plan: readonly [string, boolean, number, number][] = [
    ['1 person, purge', true, 1, 1],
    [`${BULK} persons, purge`, true, 1000, BULK],
    ['1 person, no purge', false, 2, 1],
    [`${BULK} persons, no purge`, false, 2000, BULK],
  ];
  for (const [name, purge, first, count] of plan) {
    const r = await erase(name, purge, first, count);
    runs.push(r);
    process.stderr.write(
      `${name}: done in ${s(r.doneMs)} s, steps ${r.steps.map((x) => `${x.step} ${x.table} ${s(x.ms)}`).join(', ')}\n`,
    );
  }
  const written = run.write({
    events: EVENTS,
    persons: PERSONS,
    generateMs,
    optimizeMs,
    rest,
    runs,
  });
  process.stdout.write(`${renderText(table(runs))}\n\nwrote ${written}\n`);
} finally {
  await weir.close();
  rmSync(dir, { recursive: true, force: true });
}
