/**
 * Starts a real `nats-server -js` on a free loopback port with its own store directory (nats.js's `nst`
 * launcher is the model), and can stop and restart it on the same port and store, for failure tests.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer, connect as tcpConnect } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Which nats-server the tests run: `current`, one that can sync before it acknowledges (2.10 or later:
 * `WEIR_TEST_NATS_SERVER`, else the newest `scripts/fetch-nats-server.sh` unpacked, else the one on PATH);
 * `legacy`, the one on PATH (Debian 12's 2.9.10), for the fallbacks Weir keeps for servers before 2.9.21.
 */
export function natsServerBinary(which: 'current' | 'legacy' = 'current'): string {
  if (which === 'legacy') return process.env['WEIR_TEST_NATS_SERVER_LEGACY'] ?? 'nats-server';
  if (process.env['WEIR_TEST_NATS_SERVER']) return process.env['WEIR_TEST_NATS_SERVER'];
  const cache = join(process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'weir');
  const fetched = existsSync(cache)
    ? readdirSync(cache)
        .filter((d) => d.startsWith('nats-server-') && existsSync(join(cache, d, 'nats-server')))
        .sort((a, b) => versionOrder(a.slice('nats-server-'.length), b.slice('nats-server-'.length)))
    : [];
  return fetched.length > 0 ? join(cache, fetched.at(-1)!, 'nats-server') : 'nats-server';
}

function versionOrder(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < 3; i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) - (pb[i] ?? 0);
  return 0;
}

/** The version a nats-server binary says it is (`2.10.27`), or undefined when it does not run. */
export function natsServerVersion(binary: string): string | undefined {
  const probe = spawnSync(binary, ['--version'], { encoding: 'utf8' });
  return probe.status === 0 ? /v(\d+\.\d+\.\d+)/.exec(probe.stdout)?.[1] : undefined;
}

export interface NatsServerOptions {
  /** Opens the monitoring port (`/varz`). */
  readonly monitor?: boolean;
  /** JetStream's `sync_interval: always`: fsync before each acknowledgement (2.10 or later). */
  readonly syncAlways?: boolean;
  readonly binary?: 'current' | 'legacy';
}

export interface NatsServer {
  readonly url: string;
  readonly port: number;
  /** The running server's process id (for a tracer to attach to). */
  readonly pid: number;
  /** The binary's version (`2.10.27`). */
  readonly version: string;
  /** The monitoring port's URL (`/varz`), when started with `monitor`. */
  readonly monitorUrl?: string;
  /** Its JetStream store directory (`-sd`), for tests that damage it while the server is down. */
  readonly storeDir: string;
  stop(): Promise<void>;
  /** SIGKILL: no flush, no clean shutdown of its stores; waits for the exit. */
  kill9(): Promise<void>;
  /** Starts it again on the same port and store directory. */
  restart(): Promise<void>;
  /** Freezes the server (SIGSTOP) and waits until it is stopped: connections stay open, nothing is answered. */
  pause(): Promise<void>;
  /** Thaws a paused server (SIGCONT). */
  resume(): void;
  /** Stops it and removes its store. */
  close(): Promise<void>;
  /** What it has logged since it last started. */
  log(): string;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = tcpConnect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

export async function startNatsServer(options: NatsServerOptions = {}): Promise<NatsServer> {
  const monitor = options.monitor ? await freePort() : undefined;
  return startNode(await freePort(), monitor === undefined ? [] : ['-m', String(monitor)], options, monitor);
}

/** One `nats-server -js` on `port` with a store of its own, and `extra` arguments (a cluster's). */
async function startNode(
  port: number,
  extra: readonly string[],
  options: NatsServerOptions = {},
  monitor?: number,
): Promise<NatsServer> {
  const binary = natsServerBinary(options.binary);
  const version = natsServerVersion(binary);
  if (version === undefined)
    throw new Error(`${binary} does not run (scripts/fetch-nats-server.sh fetches one)`);
  const storeDir = mkdtempSync(join(tmpdir(), 'weir-nats-'));
  const args = ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', storeDir, ...extra];
  if (options.syncAlways) {
    // sync_interval has no command-line flag; the file gives only that, the flags the rest.
    const conf = join(storeDir, 'sync-always.conf');
    writeFileSync(conf, 'jetstream { sync_interval: always }\n');
    args.push('-c', conf);
  }
  let child: ChildProcess | undefined;
  let log = '';

  const start = async (): Promise<void> => {
    log = '';
    child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (d: Buffer) => (log += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
    const deadline = Date.now() + 15_000;
    while (!(await canConnect(port))) {
      if (child.exitCode !== null) throw new Error(`nats-server exited (${child.exitCode}):\n${log}`);
      if (Date.now() > deadline) throw new Error(`nats-server did not start:\n${log}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const stop = async (signal: NodeJS.Signals = 'SIGTERM'): Promise<void> => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill(signal);
    await exited;
  };

  await start();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    get pid() {
      return child?.pid ?? 0;
    },
    version,
    ...(monitor === undefined ? {} : { monitorUrl: `http://127.0.0.1:${monitor}` }),
    storeDir,
    stop: () => stop(),
    kill9: () => stop('SIGKILL'),
    restart: start,
    async pause() {
      const c = child;
      if (!c?.pid) return;
      c.kill('SIGSTOP');
      // The signal takes effect when the kernel next schedules the process: wait until /proc says stopped.
      const deadline = Date.now() + 5_000;
      while (!/^\d+ \(.*\) T/.test(readFileSync(`/proc/${c.pid}/stat`, 'utf8'))) {
        if (Date.now() > deadline) throw new Error('nats-server did not stop on SIGSTOP');
        await new Promise((r) => setTimeout(r, 5));
      }
    },
    resume: () => child?.kill('SIGCONT'),
    log: () => log,
    async close() {
      await stop();
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
}

export interface NatsCluster {
  /** Every node's client URL, comma-separated (`WEIR_NATS_URL` takes them so). */
  readonly url: string;
  readonly nodes: readonly NatsServer[];
  /** Stops every node and removes their stores. */
  close(): Promise<void>;
}

/**
 * Starts `size` real `nats-server -js` nodes on loopback forming one cluster (routes to each other, a store
 * directory each), and waits until JetStream has a meta leader, so streams with `size` replicas can be made.
 * Each node can be stopped and restarted on its ports and store, as a single server can.
 */
export async function startNatsCluster(
  size = 3,
  options: Pick<NatsServerOptions, 'binary'> = {},
): Promise<NatsCluster> {
  const ports = await Promise.all(Array.from({ length: size }, () => freePort()));
  const routePorts = await Promise.all(Array.from({ length: size }, () => freePort()));
  const routes = routePorts.map((p) => `nats://127.0.0.1:${p}`).join(',');
  const nodes: NatsServer[] = [];
  try {
    for (let i = 0; i < size; i++) {
      nodes.push(
        await startNode(
          ports[i]!,
          [
            '-n',
            `weir-test-${i}`,
            '--cluster_name',
            'weir-test',
            '--cluster',
            `nats://127.0.0.1:${routePorts[i]}`,
            '--routes',
            routes,
          ],
          options,
        ),
      );
    }
    await waitForMetaLeader(ports[0]!, size);
  } catch (err) {
    // The nodes' own account of it, for a cluster that did not form.
    const logs = nodes.map((n, i) => `--- node ${i}:\n${n.log().split('\n').slice(-15).join('\n')}`);
    await Promise.all(nodes.map((n) => n.close()));
    throw new Error(`${(err as Error).message}\n${logs.join('\n')}`, { cause: err });
  }
  return {
    url: nodes.map((n) => n.url).join(','),
    nodes,
    async close() {
      await Promise.all(nodes.map((n) => n.close()));
    },
  };
}

/**
 * Polls until the cluster's JetStream can place a stream on all `replicas` nodes: it refuses API calls until it
 * has a meta leader, and a stream of R3 until the leader knows every peer current (on a loaded machine, a
 * moment after the leader is elected), so a probe stream is made and removed.
 */
async function waitForMetaLeader(port: number, replicas: number): Promise<void> {
  const { connect } = await import('@nats-io/transport-node');
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const nc = await connect({ servers: `127.0.0.1:${port}` });
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        const jsm = await jetstreamManager(nc, { timeout: 2000 });
        await jsm.streams.add({ name: 'READY_PROBE', subjects: ['ready.probe'], num_replicas: replicas });
        await jsm.streams.delete('READY_PROBE');
        return;
      } catch (err) {
        if (Date.now() > deadline)
          throw new Error('the NATS cluster has no JetStream leader', { cause: err });
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } finally {
    await nc.close();
  }
}
