/**
 * A role's shutdown as a supervisor sees it: the exit code, and the outcome as the process's last log line — also
 * when the line before it is still being written (pino's destination writes asynchronously).
 */
import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import t from 'tap';
import { waitFor } from '../helpers/weir.ts';

const SRC = join(import.meta.dirname, '../../src');

/** A process whose role fails a step on SIGTERM (its teardown logs the step, close rejects) after `lines` lines. */
function script(lines: number, stepBytes: number): string {
  return `
    import { createLogger } from ${JSON.stringify(pathToFileURL(join(SRC, 'core/logger.ts')).href)};
    import { runUntilSignal } from ${JSON.stringify(pathToFileURL(join(SRC, 'cli/run-until-signal.ts')).href)};
    import { Teardown } from ${JSON.stringify(pathToFileURL(join(SRC, 'roles/teardown.ts')).href)};
    const logger = createLogger('info');
    const teardown = new Teardown(logger);
    teardown.push('stop consuming', () => { throw Object.assign(new Error('2 batch(es) left on the bus'), { detail: 'y'.repeat(${stepBytes}) }); });
    runUntilSignal({ close: () => teardown.run(), shutdownState: () => teardown.state() }, logger, { shutdownDeadlineSeconds: 10 });
    for (let i = 0; i < ${lines}; i++) logger.info({ i, pad: 'x'.repeat(200) }, 'busy');
    logger.info('ready');
    setInterval(() => {}, 1000);
  `;
}

async function runOnce(
  lines: number,
  stepBytes: number,
): Promise<{ code: number | null; last: { msg: string; exitCode?: number } }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--input-type=module', '-e', script(lines, stepBytes)],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const closed = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  await waitFor(
    () => Promise.resolve(out.includes('"msg":"ready"') ? true : undefined),
    20_000,
    'the process to start',
  );
  child.kill('SIGTERM');
  const code = await closed;
  const lines_ = out.split('\n').filter((l) => l.startsWith('{'));
  if (lines_.length === 0) throw new Error(`no log lines; stderr:\n${err}`);
  return { code, last: JSON.parse(lines_.at(-1)!) as { msg: string; exitCode?: number } };
}

t.test(
  'a failed step: exit 1, and the outcome is the last line even with the step line in flight',
  async (t) => {
    for (let run = 0; run < 8; run++) {
      const { code, last } = await runOnce(run * 50, run % 2 === 0 ? 10 : 1 << 20);
      t.equal(code, 1, `run ${run}: exit code 1`);
      t.match(
        last,
        { exitCode: 1, msg: /^shutdown finished with a failed step: 2 batch\(es\) left on the bus/ },
        `run ${run}: last line`,
      );
    }
  },
);
