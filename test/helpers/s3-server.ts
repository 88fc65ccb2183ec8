/**
 * Starts a real S3-compatible server on a free loopback port for the S3 adapter's tests: moto in server mode
 * (`python3 -m moto.server`; `.ci/run` and the README's test command install it with pip). It keeps objects
 * in memory, speaks S3's REST API (multipart uploads, ranges, listing) and takes any credentials.
 * Like nats-server.ts, it can freeze the server (SIGSTOP) so that requests hang, for timeout tests.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { readFileSync } from 'node:fs';

export interface S3Server {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string;
  readonly port: number;
  /** Makes a bucket (moto takes an unsigned request). */
  createBucket(name: string): Promise<void>;
  /** Freezes the server: connections are accepted by the kernel, nothing is answered. */
  pause(): Promise<void>;
  /** Thaws a paused server. */
  resume(): void;
  /** Stops the server and waits for it to exit. */
  close(): Promise<void>;
}

/** The command that runs moto's server; `python3` unless `MOTO_PYTHON` names another interpreter. */
const PYTHON = process.env['MOTO_PYTHON'] ?? 'python3';
/** Longest wait for moto to answer after it is spawned (it imports a lot: ~1.5 s seen here). */
const START_DEADLINE_MS = 30_000;

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

async function answers(endpoint: string): Promise<boolean> {
  try {
    // moto's own API root: answers once the WSGI app serves, before any bucket exists.
    const res = await fetch(`${endpoint}/moto-api/`, { signal: AbortSignal.timeout(1000) });
    await res.arrayBuffer();
    return res.ok;
  } catch {
    return false;
  }
}

/** Starts moto; rejects with its output when it exits or does not answer in time. */
export async function startS3Server(): Promise<S3Server> {
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  let log = '';
  let spawnError: Error | undefined;
  const child: ChildProcess = spawn(PYTHON, ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(port)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.on('error', (err) => (spawnError = err));
  child.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null || spawnError) return;
    child.kill('SIGCONT'); // a paused process would not act on SIGTERM until thawed
    child.kill('SIGTERM');
    await exited;
  };

  const deadline = Date.now() + START_DEADLINE_MS;
  while (!(await answers(endpoint))) {
    const why = spawnError
      ? `cannot run ${PYTHON}: ${spawnError.message}`
      : child.exitCode !== null
        ? `moto exited (${child.exitCode})`
        : Date.now() > deadline
          ? `moto did not answer within ${START_DEADLINE_MS} ms`
          : undefined;
    if (why) {
      await stop();
      throw new Error(`${why}; install it with: pip install 'moto[server]'\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }

  return {
    endpoint,
    port,
    async createBucket(name) {
      const res = await fetch(`${endpoint}/${name}`, { method: 'PUT' });
      if (!res.ok) throw new Error(`cannot create bucket ${name}: ${res.status} ${await res.text()}`);
    },
    async pause() {
      const pid = child.pid;
      if (pid === undefined) return;
      child.kill('SIGSTOP');
      // The signal takes effect when the kernel next schedules the process: wait until /proc says stopped.
      const until = Date.now() + 5_000;
      while (!/^\d+ \(.*\) T/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))) {
        if (Date.now() > until) throw new Error('moto did not stop on SIGSTOP');
        await new Promise((r) => setTimeout(r, 5));
      }
    },
    resume: () => void child.kill('SIGCONT'),
    close: stop,
  };
}
