/**
 * The nats-server of the JetStream mode: `nats-server -js` on a free loopback port with a temporary store
 * directory, tracked like the benchmark's other children so it never outlives the runner.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { freePort, spawnTracked, stopChild } from './child-processes.ts';
import type { NatsSync } from './options.ts';
import { HOST } from './targets.ts';
import { natsServerBinary, natsServerVersion } from '../../test/helpers/nats-server.ts';

const READY_TIMEOUT_MS = 15_000;

export interface BenchNats {
  readonly url: string;
  readonly pid: number;
  readonly version: string;
  readonly sync: NatsSync;
  /** Stops the server and removes its store. */
  stop(): Promise<void>;
}

/** Resolves once JetStream answers on the new server (not merely once the port accepts connections). */
export async function startNats(sync: NatsSync = 'interval'): Promise<BenchNats> {
  const port = await freePort();
  const storeDir = mkdtempSync(join(tmpdir(), 'weir-bench-nats-'));
  const binary = natsServerBinary();
  const version = natsServerVersion(binary) ?? 'unknown';
  const args = ['-js', '-a', HOST, '-p', String(port), '-sd', storeDir];
  if (sync === 'always') {
    // sync_interval has no command-line flag: a file with only that, the flags for the rest.
    const conf = join(storeDir, 'sync-always.conf');
    writeFileSync(conf, 'jetstream { sync_interval: always }\n');
    args.push('-c', conf);
  }
  const child = spawnTracked(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr?.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-2000)));
  const url = `nats://${HOST}:${port}`;
  const stop = async (): Promise<void> => {
    await stopChild(child, 5000);
    rmSync(storeDir, { recursive: true, force: true });
  };
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await stop();
      throw new Error(`nats-server exited (${child.exitCode ?? child.signalCode}):\n${log}`);
    }
    try {
      const nc = await connect({ servers: url, timeout: 1000 });
      try {
        await (await jetstreamManager(nc)).getAccountInfo();
      } finally {
        await nc.close();
      }
      return { url, pid: child.pid!, version, sync, stop };
    } catch {
      // Not listening, or JetStream not up yet: poll until the deadline.
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`nats-server did not start within ${READY_TIMEOUT_MS} ms:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
