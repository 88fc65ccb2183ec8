/**
 * The runner's handle on the load-generator child process: start it, run one load spec at a time over IPC,
 * and stop it. Every run has a deadline here too, so a wedged generator cannot hang the benchmark.
 */
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT, spawnTracked, stopChild } from './child-processes.ts';
import type { GeneratorReply, GeneratorRequest } from './generator-process.ts';
import type { LoadResult, LoadSpec } from '../../src/loadgen/load-generator.ts';

/** Time allowed beyond a run's own duration and drain for connecting and reporting back. */
const RUN_SLACK_MS = 30_000;

export interface GeneratorRun {
  readonly result: LoadResult;
  readonly meanBodyBytes: number;
}

export class GeneratorClient {
  readonly #child: ChildProcess;
  #nextId = 1;

  private constructor(child: ChildProcess) {
    this.#child = child;
  }

  /** `env` is added to the runner's: `BENCH_GENERATOR_IPS` (generator-process.ts) gives the events addresses. */
  static start(env: Readonly<Record<string, string>> = {}): GeneratorClient {
    const child = spawnTracked(
      process.execPath,
      [join(REPO_ROOT, 'bin/run-ts.js'), join(REPO_ROOT, 'bench/capture/generator-process.ts')],
      { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
    );
    return new GeneratorClient(child);
  }

  get pid(): number {
    return this.#child.pid ?? 0;
  }

  run(spec: LoadSpec): Promise<GeneratorRun> {
    const id = this.#nextId++;
    const child = this.#child;
    return new Promise<GeneratorRun>((resolve, reject) => {
      const cleanup = (): void => {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
      };
      const onMessage = (message: GeneratorReply): void => {
        if (message.id !== id) return;
        cleanup();
        if (message.ok) resolve({ result: message.result, meanBodyBytes: message.meanBodyBytes });
        else reject(new Error(`load generator: ${message.error}`));
      };
      const onExit = (code: number | null): void => {
        cleanup();
        reject(new Error(`load generator exited (${code}) during a run`));
      };
      const timer = setTimeout(
        () => {
          cleanup();
          reject(
            new Error(
              `load generator did not report within ${spec.durationMs + spec.drainMs + RUN_SLACK_MS} ms`,
            ),
          );
        },
        spec.durationMs + spec.drainMs + RUN_SLACK_MS,
      );
      child.on('message', onMessage);
      child.once('exit', onExit);
      const request: GeneratorRequest = { id, spec };
      child.send(request);
    });
  }

  async stop(): Promise<void> {
    if (this.#child.connected) this.#child.disconnect();
    await stopChild(this.#child, 2000);
  }
}
