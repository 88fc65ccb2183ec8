/**
 * `node bin/run-ts.js bench/engine/side-by-side.ts [--rows N]`: can chDB (the `chdb` package) run reads side by
 * side in one process on one data directory, and what does that do to the leftover-output bug the gate works
 * around (src/store/embedded/chdb-gate.ts)? One heavy read (a count over `numbers(N)` hashing every number)
 * runs on one connection while a light read runs again and again on another; the light read's latencies are
 * what a second project would see. Cases:
 * - the store's client (ChdbClient.queryTable), the reads of two projects and of one;
 * - two Sessions on the directory, parameters bound by chdb-node (`queryBindAsync`) on both;
 * - the heavy read bound, the light one with no parameters;
 * - both with their parameters set on their own connection (`SET param_…`) and run with none;
 * - two reads on one connection at once.
 * Then whether parameters set that way stay on their connection when three connections set and read them at
 * once, and whether a failed statement's leftover output reaches another connection. Prints JSON lines;
 * bench/results/engine-side-by-side.md is written from them by hand.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
import { Session } from 'chdb';
import { ChdbClient } from '../../src/store/embedded/chdb-client.ts';

const args = process.argv.slice(2);
const rowsArg = args.indexOf('--rows');
const rows = rowsArg >= 0 ? Number(args[rowsArg + 1]) : 50_000_000;

const HEAVY = 'SELECT count() FROM numbers({n:UInt64}) WHERE sipHash64(number) % 7 = 3';
const LIGHT = 'SELECT {x:UInt64} + 1';

function print(o: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ ...o, load1: Number(loadavg()[0]!.toFixed(2)) })}\n`);
}

function summary(ms: number[]): Record<string, number> {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number): number =>
    Math.round(s[Math.min(s.length - 1, Math.floor(q * s.length))]! * 10) / 10;
  return { n: s.length, p50: at(0.5), p90: at(0.9), max: at(1) };
}

/** Runs `heavy`, and `light` over and over (20 ms apart) until it ends: the heavy run's ms, the light ones'. */
async function during(
  heavy: () => Promise<unknown>,
  light: () => Promise<unknown>,
): Promise<Record<string, unknown>> {
  const started = performance.now();
  let done = false;
  const h = heavy().then(() => {
    done = true;
    return performance.now() - started;
  });
  // Give the heavy read its start first, as a query already running would have.
  await new Promise((r) => setTimeout(r, 100));
  const lat: number[] = [];
  while (!done) {
    const t = performance.now();
    await light();
    lat.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 20));
  }
  return { heavyMs: Math.round(await h), light: summary(lat) };
}

/** `SET param_…` for `params` on one connection: the values in ClickHouse's escaped text form, as literals. */
function setParams(params: Record<string, string | number>): string {
  const lit = (v: string): string =>
    `'${v.replace(/\\/g, '\\\\\\\\').replace(/\t/g, '\\\\t').replace(/'/g, "\\'")}'`;
  return `SET ${Object.entries(params)
    .map(([k, v]) => `param_${k} = ${lit(String(v))}`)
    .join(', ')}`;
}

const dir = mkdtempSync(join(tmpdir(), 'weir-bench-sbs-'));
try {
  // The store's client (ChdbClient.queryTable): reads of two projects, and two reads of one project. Before
  // issue 31 every call went through one gate, so the light read waited for the heavy one in both.
  {
    const client = ChdbClient.open(join(dir, 'gate'));
    const alone = performance.now();
    await client.queryTable(HEAVY, { n: rows });
    print({ case: 'heavy alone', heavyMs: Math.round(performance.now() - alone), rows });
    print({
      case: 'store client: heavy of project 1, light of project 2',
      ...(await during(
        () => client.queryTable(HEAVY, { n: rows }, { project: 1, kind: 'adhoc' }),
        () => client.queryTable(LIGHT, { x: 1 }, { project: 2, kind: 'adhoc' }),
      )),
    });
    print({
      case: 'store client: heavy and light of project 1',
      ...(await during(
        () => client.queryTable(HEAVY, { n: rows }, { project: 1, kind: 'adhoc' }),
        () => client.queryTable(LIGHT, { x: 1 }, { project: 1, kind: 'adhoc' }),
      )),
    });
    await client.close();
  }
  const path = join(dir, 'sessions');
  const a = new Session(path);
  const b = new Session(path);
  const c = new Session(path);
  const light: number[] = [];
  for (let i = 0; i < 20; i++) {
    const t = performance.now();
    await b.queryAsync(setParams({ x: 1 }));
    await b.queryAsync(LIGHT);
    light.push(performance.now() - t);
  }
  print({ case: 'light alone, SET then plain', light: summary(light) });
  print({
    case: 'two sessions, both bound',
    ...(await during(
      () => a.queryBindAsync(HEAVY, { n: rows }),
      () => b.queryBindAsync(LIGHT, { x: 1 }),
    )),
  });
  print({
    case: 'two sessions, heavy bound, light plain',
    ...(await during(
      () => a.queryBindAsync(HEAVY, { n: rows }),
      () => b.queryAsync('SELECT 1 + 1'),
    )),
  });
  print({
    case: 'two sessions, both SET then plain',
    ...(await during(
      async () => {
        await a.queryAsync(setParams({ n: rows }));
        await a.queryAsync(HEAVY);
      },
      async () => {
        await b.queryAsync(setParams({ x: 1 }));
        await b.queryAsync(LIGHT);
      },
    )),
  });
  print({
    case: 'one session, both plain',
    ...(await during(
      async () => {
        await a.queryAsync(setParams({ n: rows }));
        await a.queryAsync(HEAVY);
      },
      () => a.queryAsync('SELECT 1 + 1'),
    )),
  });

  // Parameters set on a connection stay there: three connections set and read their own at once.
  let checks = 0;
  let wrong = 0;
  await Promise.all(
    [a, b, c].map(async (s, k) => {
      for (let i = 0; i < 300; i++) {
        const v = `${k}-${i}\t'\\`;
        await s.queryAsync(setParams({ v, k }));
        const r = JSON.parse(
          (await s.queryAsync('SELECT {v:String} AS v, {k:UInt8} AS k', { format: 'JSONEachRow' })).text(),
        ) as { v: string; k: number };
        checks++;
        if (r.v !== v || r.k !== k) wrong++;
      }
    }),
  );
  print({ case: 'SET params on three connections at once', checks, wrong });

  // The leftover output of a statement that fails part-way: on its own connection, or on others too?
  const failing =
    'SELECT number, throwIf(number = 60000) FROM numbers(100000) SETTINGS max_block_size = 1000';
  let failed = false;
  try {
    await a.queryAsync(failing, { format: 'JSONCompactEachRowWithNamesAndTypes' });
  } catch {
    failed = true;
  }
  const other = (
    await b.queryAsync('SELECT 7 AS x', { format: 'JSONCompactEachRowWithNamesAndTypes' })
  ).text();
  const same = (
    await a.queryAsync('SELECT 7 AS x', { format: 'JSONCompactEachRowWithNamesAndTypes' })
  ).text();
  print({
    case: 'leftover of a failed statement',
    failed,
    otherConnectionBytes: other.length,
    otherConnectionClean: other === '["x"]\n["UInt8"]\n[7]\n',
    sameConnectionBytes: same.length,
    sameConnectionClean: same === '["x"]\n["UInt8"]\n[7]\n',
  });
  a.close();
  b.close();
  c.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
