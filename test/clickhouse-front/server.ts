/**
 * The ClickHouse front, test-only (README.md beside this file): ClickHouse's HTTP interface on 127.0.0.1 over
 * one chDB session, so the server store can be tested through `@clickhouse/client` where no ClickHouse server
 * can be installed. Never shipped, never imported by src/.
 *
 *   npm run clickhouse-front -- --port PORT [--data-dir DIR] [--password P]
 *
 * Prints `ready` on stdout once it listens (`ready 127.0.0.1:PORT` when `--port 0` let the system choose);
 * on SIGTERM or SIGINT it answers what it has taken, closes the session, and exits 0.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Engine } from './engine.ts';
import { createFront } from './http.ts';

const HOST = '127.0.0.1';

function usage(message: string): never {
  process.stderr.write(
    `clickhouse-front: ${message}\nusage: npm run clickhouse-front -- --port PORT [--data-dir DIR] [--password P]\n`,
  );
  process.exit(2);
}

let args;
try {
  args = parseArgs({
    options: {
      port: { type: 'string' },
      'data-dir': { type: 'string' },
      password: { type: 'string' },
    },
    strict: true,
  }).values;
} catch (err) {
  usage((err as Error).message);
}
if (args.port === undefined) usage('--port is required');
const port = Number(args.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) usage(`bad --port ${args.port}`);

// Without --data-dir, a directory of its own, removed at exit.
const ownDir = args['data-dir'] === undefined;
const dataDir = ownDir ? mkdtempSync(join(tmpdir(), 'clickhouse-front-')) : resolve(args['data-dir']!);
mkdirSync(dataDir, { recursive: true });

const engine = await Engine.open(dataDir);
const server = createFront({ engine, ...(args.password !== undefined ? { password: args.password } : {}) });

let stopping = false;
const stop = async (): Promise<void> => {
  if (stopping) return;
  stopping = true;
  server.close();
  // What was taken is answered before the session closes; idle keep-alive sockets go at once.
  server.closeIdleConnections();
  await engine.close();
  server.closeAllConnections();
  if (ownDir) rmSync(dataDir, { recursive: true, force: true });
  process.exit(0);
};
for (const signal of ['SIGTERM', 'SIGINT'] as const)
  process.on(signal, () => {
    stop().catch((err: unknown) => {
      process.stderr.write(`clickhouse-front: ${String(err)}\n`);
      process.exit(1);
    });
  });

// `npm run` does not pass SIGTERM on to the script it started: when the process that started the front is
// gone (the front is handed to another parent), the front stops as on SIGTERM rather than live on alone.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.kill(process.pid, 'SIGTERM');
}, 500).unref();

server.on('error', (err) => {
  process.stderr.write(`clickhouse-front: ${err.message}\n`);
  process.exit(1);
});
server.listen(port, HOST, () => {
  const address = server.address();
  const chosen = typeof address === 'object' && address ? address.port : port;
  process.stdout.write(port === 0 ? `ready ${HOST}:${chosen}\n` : 'ready\n');
});
