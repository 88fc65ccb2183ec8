import { parseArgs } from 'node:util';
import { ConfigError } from '../config/config.ts';
import { runSql } from './sql.ts';
import { runStart } from './start.ts';

const USAGE = `usage: weir <command> [options]

commands:
  start                     run Weir: capture, ingest and store in one process (the embedded default)
  sql [--data-dir DIR] SQL  run ClickHouse SQL on a stopped Weir's data directory; prints JSON lines

options of start (each also read from its WEIR_* environment variable; see README):
  --host HOST  --port PORT  --data-dir DIR  --log-level LEVEL  --nats-url URL
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const { values, positionals } = parseArgs({
    args: rest,
    options: {
      host: { type: 'string' },
      port: { type: 'string' },
      'data-dir': { type: 'string' },
      'log-level': { type: 'string' },
      'nats-url': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.help || command === undefined || command === 'help' || command === '--help') {
    process.stdout.write(USAGE);
    return command === undefined ? 2 : 0;
  }
  const { help: _help, ...flags } = values;
  switch (command) {
    case 'start':
      if (positionals.length > 0)
        throw new UsageError(`start takes no arguments, got '${positionals.join(' ')}'`);
      return runStart(flags);
    case 'sql':
      if (positionals.length !== 1) throw new UsageError('sql takes exactly one SQL statement (quote it)');
      return runSql(flags, positionals[0]!);
    default:
      throw new UsageError(`unknown command '${command}'`);
  }
}

class UsageError extends Error {}

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
