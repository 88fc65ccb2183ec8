/**
 * The "ClickHouse server" of `--ingest` runs. No ClickHouse server can be installed on these machines, so
 * the bench uses the test-only ClickHouse front (test/clickhouse-front/README.md): ClickHouse's HTTP
 * interface over one chDB session, in one Node process on the same cores as everything else, answering one
 * statement at a time. Figures measured on it are the overhead of Weir's multi-process path over a store
 * reached by HTTP, not ClickHouse's speed, and the report says so.
 *
 * The front is spawned here, with the command of the `clickhouse-front` npm script as
 * test/clickhouse-front/start.ts runs it, rather than through that module's startFront(): the bench needs the
 * child's pid (the front's CPU is the store's, reported beside the roles') and must have it killed with its
 * other children if the runner dies (child-processes.ts).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@clickhouse/client';
import { REPO_ROOT, spawnTracked, stopChild } from './child-processes.ts';
import type { SqlRunner } from './lag-sampler.ts';

/**
 * The longest request line and headers the front takes, as a ClickHouse server's `http_max_uri_size` (1 MiB
 * by default; chDB reports the same). The front is a node:http server, whose default is 16 KiB: it refuses
 * a longer URL with 431 and an empty body before the front sees it, and the server store sends a lookup's
 * ids as `param_ids` in the URL, so under load most of ingest's lookups failed and were redelivered, which
 * a server would have answered.
 */
const MAX_HTTP_HEADER_BYTES = 1024 * 1024;
/** chDB loads its engine before the front listens: seconds on a busy 2-core machine. */
const READY_TIMEOUT_MS = 60_000;
/** The front closes its chDB session on SIGTERM; a large store can take a while to flush. */
const STOP_GRACE_MS = 30_000;

export interface BenchFront {
  /** http://127.0.0.1:PORT */
  readonly url: string;
  readonly pid: number;
  /** Stops the front (SIGTERM) and removes its data directory; resolves with how it exited. */
  stop(): Promise<number | string>;
}

/** The front's command line, from package.json, so the bench starts what `npm run clickhouse-front` starts. */
function frontArgs(): string[] {
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  const script = pkg.scripts['clickhouse-front'] ?? '';
  const [node, ...args] = script.split(/\s+/);
  if (node !== 'node' || args.length === 0)
    throw new Error(`unexpected clickhouse-front script: '${script}'`);
  return args;
}

/** Starts a front on a fresh data directory and a port the system chooses; resolves once it printed `ready`. */
export async function startBenchFront(): Promise<BenchFront> {
  const dataDir = mkdtempSync(join(tmpdir(), 'weir-bench-front-'));
  const args = [`--max-http-header-size=${MAX_HTTP_HEADER_BYTES}`, ...frontArgs()];
  const child = spawnTracked(process.execPath, [...args, '--port', '0', '--data-dir', dataDir], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const stop = async (): Promise<number | string> => {
    const how = await stopChild(child, STOP_GRACE_MS);
    rmSync(dataDir, { recursive: true, force: true });
    return how;
  };
  try {
    const address = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no 'ready' within ${READY_TIMEOUT_MS} ms`)),
        READY_TIMEOUT_MS,
      );
      child.stdout?.on('data', (d: Buffer) => {
        stdout += d.toString();
        const ready = /^ready (\S+)$/m.exec(stdout);
        if (ready) {
          clearTimeout(timer);
          resolve(ready[1]!);
        }
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`exited (${code ?? signal}) before ready`));
      });
    });
    return { url: `http://${address}`, pid: child.pid!, stop };
  } catch (err) {
    await stop();
    throw new Error(
      `clickhouse-front did not start: ${err instanceof Error ? err.message : String(err)}\n${stdout}${stderr}`,
      { cause: err },
    );
  }
}

export interface FrontSql {
  /** One object per row (JSONEachRow). */
  readonly sql: SqlRunner;
  close(): Promise<void>;
}

/** SQL on one database of the front through @clickhouse/client, as a reader of a ClickHouse server would. */
export function frontSql(url: string, database: string): FrontSql {
  // The client's default 30 s request timeout is ample for the lag queries (seconds over a few million rows).
  const client = createClient({ url, database });
  return {
    async sql<T>(query: string): Promise<T[]> {
      const rs = await client.query({ query, format: 'JSONEachRow' });
      return rs.json<T>();
    },
    close: () => client.close(),
  };
}
