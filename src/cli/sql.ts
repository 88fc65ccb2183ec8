import { loadConfig } from '../config/config.ts';
import { createLogger } from '../core/logger.ts';
import { Metrics } from '../core/metrics.ts';
import { DataDirLock } from '../store/data-dir-lock.ts';
import { embeddedStore, openStore } from '../store/open-store.ts';

/**
 * `weir sql`: an operator's tool that runs ClickHouse SQL directly on the store and prints each row as a JSON
 * line: a data directory's embedded store (the engine allows one process per directory, so it refuses one
 * that a running Weir holds), or the ClickHouse server of WEIR_CLICKHOUSE_URL.
 */
export async function runSql(flags: Record<string, string | undefined>, sql: string): Promise<number> {
  const config = loadConfig(
    process.env,
    flags['data-dir'] === undefined ? {} : { 'data-dir': flags['data-dir'] },
  );
  for (const [name, value] of Object.entries(flags)) {
    if (name !== 'data-dir' && value !== undefined) throw new Error(`sql does not take --${name}`);
  }
  const lock = embeddedStore(config) ? DataDirLock.acquire(config.dataDir) : undefined;
  // Opening applies what the commit log holds, so the answer includes every event Weir acknowledged.
  const store = await openStore(config, {
    logger: createLogger('warn', process.stderr),
    metrics: new Metrics({ defaultMetrics: false }),
  }).catch((err: unknown) => {
    lock?.release();
    throw err;
  });
  try {
    const rows = await store.query(sql);
    const out = rows.map((r) => JSON.stringify(r)).join('\n');
    if (out) process.stdout.write(`${out}\n`);
    return 0;
  } finally {
    await store.close();
    lock?.release();
  }
}
