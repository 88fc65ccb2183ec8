import { parseArgs } from 'node:util';
import type { Format } from './inputs.ts';
import type { ImportOptions } from './importer.ts';
import { parseTarget, type ColumnTarget } from './read-csv.ts';

export const IMPORT_USAGE = `usage: weir import FILE|DIR|- --url CAPTURE_URL --api-key phc_… [options]

Sends historical events to capture's /batch/ with historical_migration: true, in file order.
Reads JSON lines (PostHog's export, NDJSON), CSV (PostHog's export, or any with --map), Parquet; .gz and
.zst files; every such file of a directory in name order; standard input (-). See docs/import.md.

options:
  --url URL              capture's base URL (e.g. http://127.0.0.1:8000)
  --api-key KEY          the project API key (phc_…) the events go to
  --format F             jsonl | csv | parquet (default: from the file name; jsonl for -)
  --map COL=FIELD        CSV column to field: event, distinct_id, timestamp, uuid, properties (JSON),
                         properties.NAME, $set, $set_once or skip (repeatable)
  --batch-size N         events per request (default 5000)
  --concurrency N        order-keeping streams, rows split by distinct id (default 1: file order)
  --rate N               events per second at most (default: as fast as capture answers)
  --checkpoint FILE      where progress is kept (default: INPUT.weir-import.json; none for -)
  --no-checkpoint        keep none (a rerun sends everything again; uuids keep it stored once)
  --rejects FILE         refused rows, JSON lines with reasons (default: INPUT.rejects.jsonl)
  --max-errors N         stop once more than N rows are refused (default: never)
  --dry-run              read and check every row, send nothing, report what would be refused
  --give-up-after S      stop when capture keeps refusing a batch for now (503) this long (default 600)
`;

export class ImportUsageError extends Error {}

/** Capture takes at most this many events a request (docs/capture.md, "Items"). */
const MAX_BATCH_SIZE = 100_000;

function batchSize(v: string | undefined): number {
  const n = positiveInt('batch-size', v, 5000)!;
  if (n > MAX_BATCH_SIZE) {
    throw new ImportUsageError(
      `--batch-size takes at most ${MAX_BATCH_SIZE} (capture's limit a request), got '${v}'`,
    );
  }
  return n;
}

function positiveInt(name: string, v: string | undefined, dflt: number | undefined): number | undefined {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < (name === 'max-errors' ? 0 : 1)) {
    throw new ImportUsageError(
      `--${name} takes a whole number${name === 'max-errors' ? '' : ' above 0'}, got '${v}'`,
    );
  }
  return n;
}

/** Reads `weir import`'s arguments; 'help' for --help. Every mistake is an `ImportUsageError` with a plain message. */
export function parseImportArgs(args: readonly string[]): ImportOptions | 'help' {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...args],
      options: {
        url: { type: 'string' },
        'api-key': { type: 'string' },
        format: { type: 'string' },
        map: { type: 'string', multiple: true },
        'batch-size': { type: 'string' },
        concurrency: { type: 'string' },
        rate: { type: 'string' },
        checkpoint: { type: 'string' },
        'no-checkpoint': { type: 'boolean' },
        rejects: { type: 'string' },
        'max-errors': { type: 'string' },
        'dry-run': { type: 'boolean' },
        'give-up-after': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new ImportUsageError((err as Error).message);
  }
  const { values: v, positionals } = parsed;
  if (v.help) return 'help';
  if (positionals.length !== 1)
    throw new ImportUsageError('import takes one FILE, DIR or - (standard input)');
  const dryRun = v['dry-run'] === true;
  if (!dryRun && v.url === undefined)
    throw new ImportUsageError('--url CAPTURE_URL is needed (or --dry-run)');
  if (!dryRun && v['api-key'] === undefined)
    throw new ImportUsageError('--api-key phc_… is needed (or --dry-run)');
  if (v.url !== undefined && !/^https?:\/\//.test(v.url)) {
    throw new ImportUsageError(`--url must start with http:// or https://, got '${v.url}'`);
  }
  if (v.format !== undefined && !['jsonl', 'csv', 'parquet'].includes(v.format)) {
    throw new ImportUsageError(`--format is jsonl, csv or parquet, got '${v.format}'`);
  }
  if (v['no-checkpoint'] && v.checkpoint !== undefined) {
    throw new ImportUsageError('--checkpoint and --no-checkpoint: give one');
  }
  const map = new Map<string, ColumnTarget>();
  for (const m of v.map ?? []) {
    const eq = m.lastIndexOf('=');
    if (eq <= 0) throw new ImportUsageError(`--map takes COLUMN=FIELD, got '${m}'`);
    try {
      map.set(m.slice(0, eq), parseTarget(m.slice(eq + 1)));
    } catch (err) {
      throw new ImportUsageError((err as Error).message);
    }
  }
  const rate = v.rate === undefined ? undefined : Number(v.rate);
  if (rate !== undefined && !(rate > 0))
    throw new ImportUsageError(`--rate takes events per second above 0, got '${v.rate}'`);
  return {
    input: positionals[0]!,
    url: v.url ?? '',
    apiKey: v['api-key'] ?? '',
    format: v.format as Format | undefined,
    map,
    batchSize: batchSize(v['batch-size']),
    concurrency: positiveInt('concurrency', v.concurrency, 1)!,
    rate,
    checkpoint: v['no-checkpoint'] ? null : v.checkpoint,
    rejects: v.rejects,
    maxErrors: positiveInt('max-errors', v['max-errors'], undefined),
    dryRun,
    giveUpAfterMs: positiveInt('give-up-after', v['give-up-after'], 600)! * 1000,
  };
}
