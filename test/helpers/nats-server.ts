/**
 * Starts a real `nats-server -js` on a free loopback port with its own store directory (nats.js's `nst`
 * launcher is the model), and can stop and restart it on the same port and store, for failure tests.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, connect as tcpConnect } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface NatsServer {
  readonly url: string;
  readonly port: number;
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

export async function startNatsServer(options: { monitor?: boolean } = {}): Promise<NatsServer> {
  if (!options.monitor) return startNode(await freePort(), []);
  const monitor = await freePort();
  const server = await startNode(await freePort(), ['-m', String(monitor)]);
  return { ...server, monitorUrl: `http://127.0.0.1:${monitor}` };
}

/** One `nats-server -js` on `port` with a store of its own, and `extra` arguments (a cluster's). */
async function startNode(port: number, extra: readonly string[]): Promise<NatsServer> {
  const storeDir = mkdtempSync(join(tmpdir(), 'weir-nats-'));
  let child: ChildProcess | undefined;
  let log = '';

  const start = async (): Promise<void> => {
    log = '';
    child = spawn('nats-server', ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', storeDir, ...extra], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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
export async function startNatsCluster(size = 3): Promise<NatsCluster> {
  const ports = await Promise.all(Array.from({ length: size }, () => freePort()));
  const routePorts = await Promise.all(Array.from({ length: size }, () => freePort()));
  const routes = routePorts.map((p) => `nats://127.0.0.1:${p}`).join(',');
  const nodes: NatsServer[] = [];
  try {
    for (let i = 0; i < size; i++) {
      nodes.push(
        await startNode(ports[i]!, [
          '-n',
          `weir-test-${i}`,
          '--cluster_name',
          'weir-test',
          '--cluster',
          `nats://127.0.0.1:${routePorts[i]}`,
          '--routes',
          routes,
        ]),
      );
    }
    await waitForMetaLeader(ports[0]!, size);
  } catch (err) {
    await Promise.all(nodes.map((n) => n.close()));
    throw err;
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
