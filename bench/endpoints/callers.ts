/**
 * Runs the endpoint benchmarks' callers (load.ts) in their own process and reads their result, with what
 * the machine did meanwhile: Weir's CPU (this process, where Weir runs, or the server processes named by
 * `serverPids` when Weir runs in others) and the CPU that went to anything else, all over exactly the span
 * the callers timed, which they mark on stderr (`timing`, `timed`).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT, processCpuSeconds } from '../capture/child-processes.ts';
import { OtherLoadProbe } from '../capture/machine-load.ts';
import type { LoadResult, LoadSpec } from './load.ts';

export interface CallersRun {
  readonly result: LoadResult;
  /** This process's CPU (Weir's, with its worker threads) while timed, in cores. */
  readonly weirCpu: number;
  /** Cores used by processes other than this one and the callers' while timed; undefined when /proc cannot tell. */
  readonly otherCores: number | undefined;
  /** Cores the hypervisor gave other guests meanwhile. */
  readonly stealCores: number | undefined;
  /** The CPU of each of `serverPids` while timed, in cores (NaN when /proc cannot tell). */
  readonly serverCpu: number[];
}

/**
 * `serverPids`: processes of the benchmark that serve the callers (Weir's roles, nats-server): their CPU is
 * taken over the timed span, and not counted as other load.
 */
export function runCallers(spec: LoadSpec, serverPids: readonly number[] = []): Promise<CallersRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [join(REPO_ROOT, 'bin/run-ts.js'), join(REPO_ROOT, 'bench/endpoints/load.ts'), JSON.stringify(spec)],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    let from:
      | { cpu: NodeJS.CpuUsage; at: number; probe: OtherLoadProbe; servers: (number | undefined)[] }
      | undefined;
    let weirCpu = Number.NaN;
    let serverCpu: number[] = serverPids.map(() => Number.NaN);
    let otherCores: number | undefined;
    let stealCores: number | undefined;
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      if (!from && stderr.includes('timing\n'))
        from = {
          cpu: process.cpuUsage(),
          at: performance.now(),
          probe: new OtherLoadProbe([...pidOf(child), ...serverPids]),
          servers: serverPids.map(processCpuSeconds),
        };
      if (from && Number.isNaN(weirCpu) && stderr.includes('timed\n')) {
        const cpu = process.cpuUsage(from.cpu);
        const ms = performance.now() - from.at;
        weirCpu = (cpu.user + cpu.system) / 1000 / ms;
        const servers = from.servers;
        serverCpu = serverPids.map((pid, i) => {
          const now = processCpuSeconds(pid);
          const then = servers[i];
          return now === undefined || then === undefined ? Number.NaN : ((now - then) * 1000) / ms;
        });
        // Read while the callers' process is still alive: its CPU is in /proc until it exits.
        otherCores = from.probe.otherCores();
        stealCores = from.probe.stealCores();
      }
    });
    child.once('error', reject);
    child.once('close', (code) => {
      if (code !== 0) return reject(new Error(`callers exited ${code}: ${stderr.slice(-500)}`));
      try {
        resolve({ result: JSON.parse(stdout) as LoadResult, weirCpu, otherCores, stealCores, serverCpu });
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  });
}

function pidOf(child: { pid?: number | undefined }): number[] {
  return child.pid === undefined ? [] : [child.pid];
}
