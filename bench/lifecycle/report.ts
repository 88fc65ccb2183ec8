/** The JSON report of a lifecycle bench (erasure, retention): its command, time, commit and machine. */
import { writeFileSync } from 'node:fs';
import { machineInfo, weirRevision } from '../capture/results.ts';

export interface BenchRun {
  readonly startedAt: string;
  /** Writes `bench/results/<bench>-<start>.json` with `fields`; its path, to print. */
  write(fields: Record<string, unknown>): string;
}

/** Started as the bench starts: the commit measured is the one it began on. */
export function benchRun(bench: string): BenchRun {
  const startedAt = new Date().toISOString();
  const revision = weirRevision();
  const args = process.argv.slice(2);
  return {
    startedAt,
    write(fields) {
      const report = {
        bench,
        command: `npm run bench:${bench}${args.length > 0 ? ` -- ${args.join(' ')}` : ''}`,
        startedAt,
        revision,
        machine: machineInfo(),
        ...fields,
      };
      const name = `${bench}-${startedAt.replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')}.json`;
      writeFileSync(new URL(`../results/${name}`, import.meta.url), `${JSON.stringify(report, null, 2)}\n`);
      return `bench/results/${name}`;
    },
  };
}
