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
  stop(): Promise<void>;
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

export async function startNatsServer(): Promise<NatsServer> {
  const port = await freePort();
  const storeDir = mkdtempSync(join(tmpdir(), 'weir-nats-'));
  let child: ChildProcess | undefined;
  let log = '';

  const start = async (): Promise<void> => {
    log = '';
    child = spawn('nats-server', ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', storeDir], {
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
  const stop = async (): Promise<void> => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    await exited;
  };

  await start();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    stop,
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
