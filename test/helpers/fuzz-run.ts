/**
 * One fuzz run of the capture path (issue 39, item 5), shared by `test/e2e/capture-fuzz.test.ts` (a fixed
 * seed, bounded) and `npm run fuzz` (long, seed random unless given): fast-check drives whole requests
 * (`fuzz-capture.ts`) into a real Weir (`fuzz-weir.ts`) and each is checked as it goes; then the run as a
 * whole, and a SIGTERM and restart on the same data.
 *
 * A failed case may have broken the store it ran on, and every case after it would fail for that reason
 * alone: so once a case fails, the next one (fast-check shrinking it) gets a fresh Weir, and the smallest
 * failing request found is one that breaks a Weir by itself.
 */
import fc from 'fast-check';
import { describeCase, type FuzzCase, fuzzCase } from './fuzz-capture.ts';
import { checkAll, checkCase, checkRestart, failureMessage, FuzzWeir, type Backend } from './fuzz-weir.ts';

export interface FuzzOptions {
  readonly backend: Backend;
  readonly seed: number;
  readonly numRuns: number;
  /** Shrink a failure to a smaller request (each try on a fresh Weir), or stop at the first. */
  readonly shrink: boolean;
  /** Stop generating after this long (the run is then shorter, not failed). */
  readonly timeLimitMs?: number;
  /** Whether a case whose event is set aside in the quarantine (with its reason) passes, or fails. */
  readonly allowQuarantine: boolean;
  readonly captureThreads: number;
  /** See FuzzWeirOptions.settleMs. */
  readonly settleMs?: number;
  /** fast-check's path of a failure, to replay it. */
  readonly path?: string;
  readonly log: (line: string) => void;
}

export interface FuzzReport {
  readonly backend: Backend;
  readonly seed: number;
  /** Cases run (sent), and skipped because the contract does not decide them. */
  readonly ran: number;
  readonly skipped: number;
  /** The first failure, as found (before shrinking). */
  readonly firstFailure: string | undefined;
  /** fast-check's report of the (shrunk) counterexample, with the request as a literal. */
  readonly failure: string | undefined;
  readonly counterexample: FuzzCase | undefined;
  /** Problems of the whole run (every 200 stored once, nothing else); `set aside: …` lines list the quarantine. */
  readonly final: readonly string[];
  /** Problems of the SIGTERM and restart. */
  readonly restart: readonly string[];
  readonly statuses: Readonly<Record<string, number>>;
  readonly events: number;
  readonly ms: number;
}

export async function runFuzz(o: FuzzOptions): Promise<FuzzReport> {
  const started = Date.now();
  const weirOptions = {
    backend: o.backend,
    captureThreads: o.captureThreads,
    allowQuarantine: o.allowQuarantine,
    settleMs: o.settleMs ?? 0,
  };
  let weir = await FuzzWeir.start(weirOptions);
  let ran = 0;
  let skipped = 0;
  let firstFailure: string | undefined;
  const statuses: Record<string, number> = {};
  try {
    const property = fc.asyncProperty(fuzzCase, async (c) => {
      if (weir.tainted) {
        await weir.close();
        weir = await FuzzWeir.start(weirOptions);
      }
      const result = await checkCase(weir, c);
      if (result.skipped !== undefined) {
        skipped++;
        fc.pre(false);
      }
      ran++;
      if (result.status !== undefined) statuses[result.status] = (statuses[result.status] ?? 0) + 1;
      if (result.problems.length > 0) {
        weir.tainted = true;
        const message = failureMessage(weir, c, result.problems);
        if (firstFailure === undefined) {
          firstFailure = message;
          o.log(`first failure (seed ${o.seed}), before shrinking:\n${message}`);
        }
        throw new Error(message);
      }
    });
    const details = await fc.check(property, {
      seed: o.seed,
      numRuns: o.numRuns,
      endOnFailure: !o.shrink,
      ...(o.path === undefined ? {} : { path: o.path }),
      ...(o.timeLimitMs === undefined ? {} : { interruptAfterTimeLimit: o.timeLimitMs }),
      // Most skipped cases are an accident of generation (two refusals in one request): allow many.
      maxSkipsPerRun: 10,
    });
    let failure: string | undefined;
    let counterexample: FuzzCase | undefined;
    if (details.failed) {
      counterexample = details.counterexample?.[0];
      const error =
        details.errorInstance instanceof Error
          ? details.errorInstance.message
          : String(details.errorInstance);
      failure = [
        `fast-check: failed after ${details.numRuns} run(s) and ${details.numShrinks} shrink(s); seed ${details.seed}, path "${details.counterexamplePath ?? ''}"`,
        counterexample ? `counterexample:\n${describeCase(counterexample)}` : '',
        `error:\n${error}`,
      ].join('\n');
      o.log(failure);
    }
    // The run as a whole and the restart are checked on the Weir the last case ran on.
    const final = await checkAll(weir);
    const restart = await checkRestart(weir);
    return {
      backend: o.backend,
      seed: o.seed,
      ran,
      skipped,
      firstFailure,
      failure,
      counterexample,
      final,
      restart,
      statuses,
      events: weir.expected.size,
      ms: Date.now() - started,
    };
  } finally {
    await weir.close();
  }
}
