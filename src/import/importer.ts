import { readFile } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import {
  defaultCheckpointPath,
  loadCheckpoint,
  removeCheckpoint,
  saveCheckpoint,
  startOf,
} from './checkpoint.ts';
import type { Checkpoint } from './checkpoint.ts';
import { toImportEvent, type ImportEvent } from './event-row.ts';
import { listInputs, openInput, type ByteCounter, type Format, type Input } from './inputs.ts';
import { Progress, type Counts } from './progress.ts';
import { readCsv, type ColumnTarget } from './read-csv.ts';
import { readJsonLines } from './read-jsonl.ts';
import { readParquetRows } from './read-parquet.ts';
import { RejectsFile } from './rejects.ts';
import { ImportFatalError, RateLimit, Sender } from './sender.ts';
import type { Position, SourceRow, StartAt } from './source-row.ts';

/** What `weir import` was asked to do (plain data: parsed from flags in options.ts). */
export interface ImportOptions {
  /** A file, a directory, or `-` (standard input). */
  readonly input: string;
  readonly url: string;
  readonly apiKey: string;
  /** Overrides the format the file names say (needed for standard input that is not JSON lines). */
  readonly format: Format | undefined;
  readonly map: ReadonlyMap<string, ColumnTarget>;
  /**
   * Events per request: about 1 MB of a PostHog export, so each request's fixed costs are a small share of it
   * while one request in flight still keeps the lane busy. @default 5000
   */
  readonly batchSize: number;
  /** Order-keeping streams, each with one request in flight; rows go by distinct id. @default 1 */
  readonly concurrency: number;
  /** Events a second at most; undefined: as fast as capture answers. */
  readonly rate: number | undefined;
  /** The checkpoint file; undefined: beside the input (none for standard input); null: none. */
  readonly checkpoint: string | null | undefined;
  /** The rejects file; undefined: beside the input (`<input>.rejects.jsonl`), or `weir-import.rejects.jsonl`. */
  readonly rejects: string | undefined;
  /** Stop once more rows than this are refused; undefined: never. */
  readonly maxErrors: number | undefined;
  readonly dryRun: boolean;
  /** How long a batch may be refused for now (503, no connection) before the import stops. @default 600000 */
  readonly giveUpAfterMs: number;
}

export interface ImportDeps {
  /** Aborted on Ctrl-C: the import stops after the requests in flight. */
  readonly signal: AbortSignal;
  /** A line for the person running it (standard error). */
  readonly log: (line: string) => void;
  readonly tty: boolean;
}

export type Outcome = 'completed' | 'interrupted' | 'max_errors';

export interface ImportReport {
  readonly outcome: Outcome;
  readonly counts: Counts;
  /** Rows a dry run found valid (would send). */
  readonly valid: number;
  readonly refusedBy: Readonly<Record<string, number>>;
  readonly seconds: number;
  readonly rejectsPath: string | undefined;
  readonly checkpointPath: string | undefined;
  /** Where the run started, when it took up a checkpoint. */
  readonly resumedFrom: { file: string; row: number } | undefined;
  readonly dryRun: boolean;
}

/** A queued event: the batch item and where it came from (for the checkpoint and the rejects file). */
interface Queued extends ImportEvent {
  readonly pos: Position;
}

/** An order-keeping stream of batches: one request in flight, each batch sent after the one before. */
interface Stream {
  buffer: Queued[];
  bufferBytes: number;
  readonly queue: Queued[][];
  running: Promise<void> | undefined;
}

/** Bytes of one request body at most: capture takes 20 MiB on the wire; this leaves room and keeps retries cheap. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;
const CHECKPOINT_EVERY_MS = 1000;

/**
 * One import: reads every row in order, refuses what cannot be an event (to the rejects file), and sends the
 * rest to `/batch/` in the historical lane. Order: capture publishes the historical lane in request order
 * and ingest replays it in that order, so rows go in file order over one stream with one request in flight;
 * with `--concurrency N`, N streams by distinct id keep each person's events in order (what persons, merges
 * and `$set` depend on), not the order between persons. The checkpoint records the first row not yet
 * answered by every stream: a resume sends again only rows after it, with their uuids, which the store keeps
 * once.
 */
export async function runImport(options: ImportOptions, deps: ImportDeps): Promise<ImportReport> {
  const started = Date.now();
  const inputs = await listInputs(options.input, options.format);
  const paths = inputs.map((i) => i.path);
  const checkpointPath = options.dryRun
    ? undefined
    : options.checkpoint === null
      ? undefined
      : (options.checkpoint ?? defaultCheckpointPath(options.input));
  const cp = checkpointPath === undefined ? undefined : await loadCheckpoint(checkpointPath, paths);
  const rejectsPath =
    options.rejects ??
    (options.input === '-'
      ? 'weir-import.rejects.jsonl'
      : `${options.input.replace(/\/+$/, '')}.rejects.jsonl`);
  const rejects = new RejectsFile(rejectsPath, paths, cp !== undefined);
  const counts: Counts = { read: 0, sent: 0, stored: 0, refused: 0, bytes: 0 };
  const refusedBy: Record<string, number> = {};
  let valid = 0;
  let outcome: Outcome = 'completed';
  let fatal: Error | undefined;
  const stopper = new AbortController();
  const stop = (why: Outcome): void => {
    if (stopper.signal.aborted) return;
    outcome = why;
    stopper.abort();
  };
  const onUserStop = (): void => stop('interrupted');
  if (deps.signal.aborted) onUserStop();
  deps.signal.addEventListener('abort', onUserStop, { once: true });

  const refuse = (pos: Position, reason: string, detail: string, row: unknown): void => {
    counts.refused++;
    refusedBy[reason] = (refusedBy[reason] ?? 0) + 1;
    rejects.write({ pos, reason, detail, row });
    if (options.maxErrors !== undefined && counts.refused > options.maxErrors) stop('max_errors');
  };

  const sender = new Sender(
    { url: options.url, apiKey: options.apiKey, giveUpAfterMs: options.giveUpAfterMs },
    {
      signal: stopper.signal,
      onWait: (what, ms) => deps.log(`import: ${what}; trying again in ${(ms / 1000).toFixed(1)} s`),
    },
  );
  const rate = options.rate === undefined ? undefined : new RateLimit(options.rate);
  const streams: Stream[] = Array.from({ length: options.concurrency }, () => ({
    buffer: [],
    bufferBytes: 0,
    queue: [],
    running: undefined,
  }));
  let queued = 0;
  let space: (() => void) | undefined;
  let lastRead: Position | undefined;

  // The first row not yet answered: the earliest row waiting in any stream, else the row after the last read.
  const watermark = (): Pick<Checkpoint, 'file' | 'row' | 'offset'> | undefined => {
    let first: Position | undefined;
    for (const s of streams) {
      const p = s.queue[0]?.[0]?.pos ?? s.buffer[0]?.pos;
      if (
        p !== undefined &&
        (first === undefined || p.file < first.file || (p.file === first.file && p.row < first.row))
      ) {
        first = p;
      }
    }
    if (first !== undefined) return { file: first.file, row: first.row, offset: first.start };
    if (lastRead !== undefined) return { file: lastRead.file, row: lastRead.row + 1, offset: lastRead.end };
    return cp;
  };
  let saving: Promise<void> | undefined;
  let savedAt = Date.now();
  const checkpoint = async (): Promise<void> => {
    const w = watermark();
    if (checkpointPath === undefined || w === undefined) return;
    await saving;
    const next: Checkpoint = { version: 1, inputs: paths, ...w, updatedAt: new Date().toISOString() };
    saving = saveCheckpoint(checkpointPath, next);
    savedAt = Date.now();
    await saving;
  };

  const drain = async (s: Stream): Promise<void> => {
    while (s.queue.length > 0 && !stopper.signal.aborted) {
      const batch = s.queue[0]!;
      if (rate !== undefined) await rate.take(batch.length, stopper.signal);
      if (stopper.signal.aborted) break;
      counts.sent += batch.length;
      let out;
      try {
        out = await sender.send(batch);
      } catch (err) {
        counts.sent -= batch.length;
        fatal = err as Error;
        stop('interrupted');
        break;
      }
      counts.stored += out.stored;
      for (const r of out.refused) {
        refuse(r.event.pos, `server:${r.code}`, r.detail, JSON.parse(r.event.json) as unknown);
      }
      if (out.aborted) {
        counts.sent -= batch.length - out.stored - out.refused.length;
        break;
      }
      s.queue.shift();
      queued--;
      space?.();
      if (Date.now() - savedAt >= CHECKPOINT_EVERY_MS && saving === undefined) {
        checkpoint().then(
          () => (saving = undefined),
          (err: unknown) => deps.log(`import: checkpoint not written: ${(err as Error).message}`),
        );
      }
    }
  };
  const flush = (s: Stream): void => {
    if (s.buffer.length === 0) return;
    s.queue.push(s.buffer);
    s.buffer = [];
    s.bufferBytes = 0;
    queued++;
    startDrain(s);
  };
  const startDrain = (s: Stream): void => {
    s.running ??= drain(s).finally(() => {
      s.running = undefined;
      // A batch queued while this drain was finishing starts its own.
      if (s.queue.length > 0 && !stopper.signal.aborted) startDrain(s);
    });
  };
  stopper.signal.addEventListener('abort', () => space?.(), { once: true });

  const progress = new Progress({
    tty: deps.tty,
    totalBytes: inputs.every((i) => i.bytes !== undefined)
      ? inputs.reduce((n, i) => n + i.bytes!, 0)
      : undefined,
    intervalMs: 10_000,
    write: deps.log,
  });
  let resumedFrom: ImportReport['resumedFrom'];
  if (cp !== undefined) {
    resumedFrom = { file: paths[cp.file] ?? '-', row: cp.row };
    deps.log(`import: resuming from ${checkpointPath}: ${resumedFrom.file}, row ${cp.row}`);
    for (let f = 0; f < cp.file; f++) counts.bytes += inputs[f]!.bytes ?? 0;
    counts.bytes += cp.offset ?? 0;
  }
  progress.start(counts);
  try {
    for (let f = 0; f < inputs.length && !stopper.signal.aborted; f++) {
      const start = startOf(cp, f);
      if (start === 'done') continue;
      for await (const run of rowsOf(inputs[f]!, f, start, options.map, counts)) {
        for (const r of run) {
          counts.read++;
          lastRead = r.pos;
          if (r.kind === 'unreadable') {
            refuse(r.pos, 'unreadable', r.reason, r.raw);
          } else {
            const res = toImportEvent(r.value, r.pos.row, r.text);
            if (!res.ok) refuse(r.pos, res.reason, res.detail, r.value);
            else if (options.dryRun) valid++;
            else {
              const s =
                streams[options.concurrency === 1 ? 0 : hash(res.event.distinctId) % options.concurrency]!;
              s.buffer.push({ ...res.event, pos: r.pos });
              s.bufferBytes += res.event.json.length + 1;
              if (s.buffer.length >= options.batchSize || s.bufferBytes >= MAX_BODY_BYTES) flush(s);
              while (queued >= 2 * options.concurrency && !stopper.signal.aborted) {
                await new Promise<void>((resolve) => (space = resolve));
              }
            }
          }
          if (stopper.signal.aborted) break;
        }
        if (stopper.signal.aborted) break;
      }
    }
    if (!stopper.signal.aborted) for (const s of streams) flush(s);
    // Wake a reader waiting for space when a stop comes, and wait for every stream's request in flight.
    for (;;) {
      const running = streams.map((s) => s.running).filter((p) => p !== undefined);
      if (running.length === 0) break;
      await Promise.all(running);
    }
  } finally {
    deps.signal.removeEventListener('abort', onUserStop);
    progress.stop();
    await rejects.close();
  }
  if (checkpointPath !== undefined) {
    await saving;
    const done = outcome === 'completed' && fatal === undefined;
    if (done) await removeCheckpoint(checkpointPath);
    else await checkpoint();
  }
  if (fatal !== undefined)
    throw fatal instanceof ImportFatalError ? fatal : new ImportFatalError(fatal.message);
  return {
    outcome,
    counts,
    valid,
    refusedBy,
    seconds: (Date.now() - started) / 1000,
    rejectsPath: rejects.count > 0 ? rejects.path : undefined,
    checkpointPath: outcome === 'completed' ? undefined : checkpointPath,
    resumedFrom,
    dryRun: options.dryRun,
  };
}

function rowsOf(
  input: Input,
  file: number,
  start: StartAt,
  map: ReadonlyMap<string, ColumnTarget>,
  counter: ByteCounter,
): AsyncGenerator<readonly SourceRow[]> {
  if (input.format === 'parquet') {
    if (input.path === '-') throw new Error('Parquet cannot be read from standard input: give the file');
    return oneByOne(countParquet(readParquetFile(file, input.path, start), input, counter));
  }
  // Only an uncompressed file seeks: elsewhere the rows before `start.row` are read and skipped.
  const seek =
    input.compression === 'none' && input.path !== '-' && input.format === 'jsonl' ? start.offset : undefined;
  const stream: Readable = openInput(input, counter, seek ?? 0);
  if (input.format === 'csv') return oneByOne(readCsv(file, stream, start, map));
  return readJsonLines(file, stream, seek === undefined ? { row: start.row } : start);
}

/** Rows of a reader that gives them one at a time, as runs the importer takes. */
async function* oneByOne(rows: AsyncIterable<SourceRow>): AsyncGenerator<readonly SourceRow[]> {
  for await (const r of rows) yield [r];
}

async function* readParquetFile(file: number, path: string, start: StartAt): AsyncGenerator<SourceRow> {
  yield* readParquetRows(file, new Uint8Array(await readFile(path)), start);
}

/** Parquet is read whole: its bytes count as read once its rows start. */
async function* countParquet(
  rows: AsyncGenerator<SourceRow>,
  input: Input,
  counter: ByteCounter,
): AsyncGenerator<SourceRow> {
  let counted = false;
  for await (const r of rows) {
    if (!counted) counter.bytes += input.bytes ?? 0;
    counted = true;
    yield r;
  }
}

/** FNV-1a of a distinct id: which stream its events take. */
function hash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
