import { parseArgs } from 'node:util';
import { CONFIG_FLAGS, ConfigError } from '../config/config.ts';

const USAGE = `usage: weir <command> [options]

commands:
  start                     run Weir: capture, ingest and store in one process (the embedded default;
                            with a NATS URL it publishes to JetStream and consumes it itself)
  capture                   HTTP capture only, publishing to NATS JetStream (needs --nats-url); reads
                            project keys from the catalog in NATS KV (or --data-dir's with --catalog file);
                            run one per core
  ingest                    consume NATS JetStream into the store: --data-dir's, or the ClickHouse server of
                            --clickhouse-url, which any number of ingest processes share (needs --nats-url);
                            /_health, /_ready and /metrics on --port (default 8001)
  query                     query, management and endpoint APIs on any machine (catalog in NATS KV:
                            needs --nats-url, and --clickhouse-url or WEIR_STORE_TOKEN: the store's owner is found
                            through NATS, or at WEIR_STORE_URL);
                            port 8002
  sql [--data-dir DIR] SQL  run ClickHouse SQL on a stopped Weir's data directory (or on the server of
                            WEIR_CLICKHOUSE_URL); prints JSON lines
  quarantine list|replay    the rows the store refused and set aside: list them, or store them again after a
                            fix, on a stopped Weir's data directory or WEIR_CLICKHOUSE_URL's server (weir
                            quarantine --help; the API does the same on a running Weir)
  backup DEST               copy a data directory (store, catalog, materializations) to a new directory or
                            s3://bucket/prefix at one point, while Weir runs or stopped (weir backup --help)
  restore SRC               fill an empty data directory from a backup
  catalog export            print the catalog as JSON: NATS KV with --nats-url, else --data-dir's file
  catalog import FILE|-     fill an empty catalog (NATS KV with --nats-url, else --data-dir's file) with it
  bench capture|compare     benchmark any PostHog-compatible capture endpoint (open loop, HDR histograms, a
                            latency plot), or compare two results side by side: see weir bench --help
  import FILE|DIR|- --url URL --api-key KEY
                            send historical events (JSON lines, CSV, Parquet; gzip, zstd) to capture's
                            historical lane, resumably (weir import --help; docs/import.md)

options of start, capture, ingest and query (each also read from its WEIR_* environment variable; see
docs/configuration.md):
  --host HOST  --port PORT  --data-dir DIR  --log-level LEVEL  --nats-url URL[,URL…]  --catalog file|nats
  --store-url URL  --bus-ack-wait-ms MS  --clickhouse-url URL
`;

class UsageError extends Error {}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  // weir bench takes none of the server flags below: it parses its own, in a module loaded only when run.
  if (command === 'bench') {
    const { runBench } = await import('./bench.ts');
    return runBench(rest);
  }
  // `import` has flags of its own, which the server flags' strict parse below would refuse.
  if (command === 'import') {
    const { runImportCommand } = await import('./import.ts');
    return runImportCommand(rest);
  }
  if (command === 'backup' || command === 'restore') {
    const { runBackupCommand } = await import('./backup.ts');
    return runBackupCommand(command, rest);
  }
  if (command === 'quarantine') {
    const { runQuarantine } = await import('./quarantine.ts');
    return runQuarantine(rest);
  }
  const { values, positionals } = parseArgs({
    args: rest,
    options: {
      ...Object.fromEntries(CONFIG_FLAGS.map((f) => [f, { type: 'string' } as const])),
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.help || command === undefined || command === 'help' || command === '--help') {
    process.stdout.write(USAGE);
    return command === undefined ? 2 : 0;
  }
  const { help: _help, ...flags } = values as Record<string, string | undefined> & { help?: boolean };
  const noArguments = (): void => {
    if (positionals.length > 0)
      throw new UsageError(`${command} takes no arguments, got '${positionals.join(' ')}'`);
  };
  const needsNats = (what: string): void => {
    if (flags['nats-url'] === undefined && process.env['WEIR_NATS_URL'] === undefined)
      throw new UsageError(`${command} ${what}: give --nats-url URL or set WEIR_NATS_URL`);
  };
  // Each command's module is loaded only when it runs: `weir capture` must never load chDB.
  switch (command) {
    case 'start': {
      noArguments();
      const { runStart } = await import('./start.ts');
      return runStart(flags);
    }
    case 'capture': {
      noArguments();
      needsNats('publishes to NATS JetStream');
      const { runCapture } = await import('./capture.ts');
      return runCapture(flags);
    }
    case 'ingest': {
      noArguments();
      needsNats('consumes from NATS JetStream');
      const { runIngest } = await import('./ingest.ts');
      return runIngest(flags);
    }
    case 'query': {
      noArguments();
      needsNats('reads the catalog from NATS KV');
      const { runQuery } = await import('./query.ts');
      return runQuery(flags);
    }
    case 'catalog': {
      const { runCatalog } = await import('./catalog.ts');
      return runCatalog(flags, positionals);
    }
    case 'sql': {
      if (positionals.length !== 1) throw new UsageError('sql takes exactly one SQL statement (quote it)');
      const { runSql } = await import('./sql.ts');
      return runSql(flags, positionals[0]!);
    }
    default:
      throw new UsageError(`unknown command '${command}'`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== -1) process.exitCode = code;
  },
  (err: unknown) => {
    if (
      err instanceof ConfigError ||
      err instanceof UsageError ||
      (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
    ) {
      process.stderr.write(`weir: ${(err as Error).message}\n\n${USAGE}`);
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`weir: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
