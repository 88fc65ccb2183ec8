import { runImport, type ImportReport } from '../import/importer.ts';
import { IMPORT_USAGE, ImportUsageError, parseImportArgs } from '../import/options.ts';
import { ImportFatalError } from '../import/sender.ts';

/**
 * `weir import`: reads its own flags (not the server's) and runs one import. Ctrl-C (or SIGTERM) stops it
 * after the requests in flight, with the checkpoint written; a second Ctrl-C exits at once. Exit codes:
 * 0 done (refused rows are in the summary and the rejects file), 1 stopped by --max-errors or a fault,
 * 2 a usage mistake, 130 interrupted.
 */
export async function runImportCommand(args: readonly string[]): Promise<number> {
  let options;
  try {
    options = parseImportArgs(args);
  } catch (err) {
    if (!(err instanceof ImportUsageError)) throw err;
    process.stderr.write(`weir import: ${err.message}\n\n${IMPORT_USAGE}`);
    return 2;
  }
  if (options === 'help') {
    process.stdout.write(IMPORT_USAGE);
    return 0;
  }
  const controller = new AbortController();
  const onSignal = (): void => {
    if (controller.signal.aborted) process.exit(130);
    process.stderr.write('\nweir import: stopping after the requests in flight (Ctrl-C again to quit now)\n');
    controller.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const report = await runImport(options, {
      signal: controller.signal,
      log: (line) => process.stderr.write(`${line}\n`),
      tty: process.stderr.isTTY === true,
    });
    process.stdout.write(summary(report));
    if (report.outcome === 'max_errors') {
      process.stderr.write(
        `weir import: stopped: more than ${options.maxErrors} rows refused (--max-errors); see ${report.rejectsPath}\n`,
      );
      return 1;
    }
    return report.outcome === 'interrupted' ? 130 : 0;
  } catch (err) {
    if (err instanceof ImportFatalError) {
      process.stderr.write(`weir import: stopped: ${err.message}\n`);
      return 1;
    }
    throw err;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** The final summary: read, sent, stored (answered 200), refused by reason, time; where to look next. */
export function summary(r: ImportReport): string {
  const c = r.counts;
  const lines = [
    r.dryRun
      ? 'dry run: nothing sent'
      : `import ${r.outcome === 'completed' ? 'completed' : r.outcome === 'interrupted' ? 'interrupted' : 'stopped (--max-errors)'}`,
    `  read      ${c.read}`,
  ];
  if (r.dryRun) lines.push(`  valid     ${r.valid} (would be sent)`);
  else lines.push(`  sent      ${c.sent}`, `  stored    ${c.stored} (answered 200)`);
  lines.push(`  refused   ${c.refused}`);
  for (const [reason, n] of Object.entries(r.refusedBy).sort((a, b) => b[1] - a[1])) {
    lines.push(`    ${reason.padEnd(28)} ${n}`);
  }
  const rate = r.seconds > 0 ? Math.round((r.dryRun ? c.read : c.stored) / r.seconds) : 0;
  lines.push(`  time      ${r.seconds.toFixed(1)} s (${rate} events/s)`);
  if (r.resumedFrom) lines.push(`  resumed   from ${r.resumedFrom.file}, row ${r.resumedFrom.row}`);
  if (r.rejectsPath) lines.push(`  rejects   ${r.rejectsPath}`);
  if (r.checkpointPath) lines.push(`  checkpoint ${r.checkpointPath} (run the same command to go on)`);
  return `${lines.join('\n')}\n`;
}
