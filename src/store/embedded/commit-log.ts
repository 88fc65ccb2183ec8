/**
 * The embedded store's commit log: an append-only file of row blocks in the data directory.
 *
 * Why it exists: every MergeTree insert creates a part on disk, and a part costs milliseconds of CPU, mostly
 * in the kernel, where an append to a file costs microseconds (DESIGN.md's measured facts). Committing each
 * group of rows as a part would cap the embedded store at about a hundred commits a second. So a commit is an
 * append here, and the applier (logged-store.ts) moves the log into the tables in large blocks.
 *
 * Layout: `<dir>/<segment>.log` files of frames, a new segment at every open and past `segmentBytes`;
 * `<dir>/state.json` records how far the tables hold the log (`applied`) and the block being applied
 * (`intent`), so recovery re-applies that block with the same deduplication token.
 *
 * Frame: u32 LE payload length, u32 LE CRC-32 of the payload, then the payload: the rows' target, u32 LE row
 * count, the rows. The target is u8 table-name length and the table name for rows that are JSON objects
 * (one JSON array of them; logs of earlier versions hold one object a line), or, for rows that are arrays of
 * values (one JSON array of arrays), a 0 byte, u8 table-name length, the table name, u16 LE length and the
 * column names joined by commas. A torn or corrupt frame at the tail of the last segment (a crash
 * mid-write) is cut off at recovery; it was never acknowledged.
 */
import { mkdir, open, readdir, readFile, rename, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { CommitThread } from './commit-thread.ts';
import { crc32 } from 'node:zlib';
import { randomUUID } from 'node:crypto';

export interface LogPosition {
  readonly segment: number;
  readonly offset: number;
}

export interface LogFrame {
  readonly table: string;
  /** The columns of rows given as arrays of values; undefined for rows that are objects. */
  readonly columns: readonly string[] | undefined;
  readonly rows: number;
  /** One JSON array of the rows (or, from logs of earlier versions, one JSON object a line). */
  readonly data: Buffer;
  /** The position just after this frame. */
  readonly end: LogPosition;
}

/** A block of the log being moved into the tables; recorded before the inserts start. */
export interface ApplyIntent {
  readonly from: LogPosition;
  readonly to: LogPosition;
  readonly token: string;
}

export interface Recovery {
  /** Frames written but not yet applied, in log order. */
  readonly frames: readonly LogFrame[];
  readonly applied: LogPosition;
  /** The block that was being applied when the process stopped, if any. */
  readonly intent: ApplyIntent | undefined;
  /** Bytes cut off the tail of the last segment (a torn write), and segments set aside as corrupt. */
  readonly truncatedBytes: number;
  readonly corruptSegments: readonly string[];
}

export interface CommitLogOptions {
  readonly dir: string;
  /** fdatasync after each write (survives power loss, at a sync's cost) or not (survives a crash of Weir). */
  readonly fsync: boolean;
  /** A new segment starts past this size. @default 64 MiB */
  readonly segmentBytes?: number;
  /** Commits under way at once (see `append`). @default 1 */
  readonly maxInFlight?: number;
  /** The file calls; tests give ones that fail. @default a `CommitThread` of the log's own */
  readonly io?: LogIo;
}

/**
 * How a commit reaches the file. Several may be under way at once, each at a position past the ones
 * before; the log answers them in log order whatever order they come back in.
 */
export interface LogIo {
  /**
   * Writes `parts` at `position`, then with `sync` makes them durable (fdatasync), and calls back once
   * done, with the error of the write or the sync if either failed.
   */
  commit(
    fd: number,
    parts: readonly Buffer[],
    position: number,
    sync: boolean,
    callback: (err: NodeJS.ErrnoException | null) => void,
  ): void;
  /** Lets go of what it holds; called once the log is drained. */
  close(): Promise<void>;
}

interface State {
  /**
   * Random, made with the log: part of every block's deduplication token, so a log started afresh (its
   * directory removed while the tables stayed) can never reuse a token the tables remember and have a new
   * block taken for an old one.
   */
  logId: string;
  applied: LogPosition;
  intent: ApplyIntent | null;
}

interface QueuedAppend {
  readonly table: string;
  readonly columns: readonly string[] | undefined;
  readonly rows: number;
  readonly data: Buffer;
  readonly resolve: (frame: LogFrame) => void;
  readonly reject: (err: unknown) => void;
}

/** One write of the log and its sync: the appends it carries, where it starts, and how it ended. */
interface Commit {
  readonly batch: readonly QueuedAppend[];
  readonly frames: readonly LogFrame[];
  /** Offset in the segment where its bytes start. */
  readonly start: number;
  settled: boolean;
  failed: boolean;
  error: unknown;
}

const HEADER = 8;
const MAX_TABLE_NAME = 255;
const MAX_COLUMNS_TEXT = 65535;
/** A column name the log can keep in its comma-joined list (and the applier name in SQL). */
const COLUMN_NAME = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const START: LogPosition = { segment: 0, offset: 0 };

export function comparePositions(a: LogPosition, b: LogPosition): number {
  return a.segment - b.segment || a.offset - b.offset;
}

const segmentName = (n: number): string => `${String(n).padStart(20, '0')}.log`;

export class CommitLog {
  readonly #options: Required<CommitLogOptions>;
  readonly #io: LogIo;
  #fh: FileHandle;
  #segment: number;
  /** Where the next commit's bytes go: past every commit under way. */
  #offset = 0;
  #queue: QueuedAppend[] = [];
  /** Commits under way, in log order; each is answered only after all before it. */
  #inFlight: Commit[] = [];
  /** A turn of `#pump` is queued. */
  #pumpQueued = false;
  /** Rotating the segment, or cutting back a failed commit: no new commit starts meanwhile. */
  #paused = false;
  #failed: Error | undefined;
  #closed = false;
  #drainWaiters: (() => void)[] = [];

  /** See `State.logId`. */
  readonly logId: string;

  private constructor(options: Required<CommitLogOptions>, fh: FileHandle, segment: number, logId: string) {
    this.#options = options;
    this.#io = options.io;
    this.#fh = fh;
    this.#segment = segment;
    this.logId = logId;
  }

  /** Opens the log in `dir` (created if missing), reading back what was written and not yet applied. */
  static async open(options: CommitLogOptions): Promise<{ log: CommitLog; recovery: Recovery }> {
    const settings = { segmentBytes: 64 * 1024 * 1024, maxInFlight: 1, ...options };
    await mkdir(settings.dir, { recursive: true });
    const state = await readState(settings.dir);
    if (state.logId === '') {
      state.logId = randomUUID();
      await writeStateFile(settings.dir, state, settings.fsync);
    }
    const segments = await listSegments(settings.dir);
    const frames: LogFrame[] = [];
    let truncatedBytes = 0;
    const corruptSegments: string[] = [];
    for (const [i, seg] of segments.entries()) {
      if (seg < state.applied.segment) continue;
      const path = join(settings.dir, segmentName(seg));
      const bytes = await readFile(path);
      const from = seg === state.applied.segment ? state.applied.offset : 0;
      const { frames: read, validEnd } = readFrames(bytes, seg, from);
      frames.push(...read);
      if (validEnd < bytes.length) {
        if (i === segments.length - 1) {
          // The tail of the newest segment: a write the crash cut short, never acknowledged.
          const fh = await open(path, 'r+');
          await fh.truncate(validEnd);
          await fh.close();
          truncatedBytes += bytes.length - validEnd;
        } else {
          // Damage inside an older segment cannot be a torn write; keep the file for the operator.
          await rename(path, `${path}.corrupt`);
          corruptSegments.push(`${path}.corrupt`);
        }
      }
    }
    const next = (segments.at(-1) ?? 0) + 1;
    const fh = await open(join(settings.dir, segmentName(next)), 'wx');
    // The thread starts last: nothing that can fail comes after it.
    const full = { ...settings, io: settings.io ?? new CommitThread() };
    const log = new CommitLog(full, fh, next, state.logId);
    return {
      log,
      recovery: {
        frames,
        applied: state.applied,
        intent: state.intent ?? undefined,
        truncatedBytes,
        corruptSegments,
      },
    };
  }

  /**
   * Appends a block of rows; resolves with its frame once written (and synced, if so configured), never
   * before the appends made earlier.
   *
   * Group commit: the appends made in one synchronous stretch go out as one commit, and appends that
   * arrive while `maxInFlight` commits are under way go out together in the next. The commits under way
   * are written and synced one after another by the io (by default the log's own thread, which lets the
   * ones that queued up share a write and a sync; see commit-thread.ts), never waiting for a turn of the
   * main thread between them; they are answered in log order.
   */
  append(table: string, rows: number, data: Buffer, columns?: readonly string[]): Promise<LogFrame> {
    if (this.#closed) return Promise.reject(new Error('the commit log is closed'));
    if (this.#failed) return Promise.reject(this.#failed);
    const nameBytes = Buffer.byteLength(table);
    if (nameBytes === 0 || nameBytes > MAX_TABLE_NAME)
      return Promise.reject(new Error(`a table name takes 1-${MAX_TABLE_NAME} bytes: '${table}'`));
    if (columns !== undefined) {
      if (columns.length === 0 || !columns.every((c) => COLUMN_NAME.test(c)))
        return Promise.reject(new Error(`not a column list the log can keep: ${JSON.stringify(columns)}`));
      if (columns.join(',').length > MAX_COLUMNS_TEXT)
        return Promise.reject(new Error('the column list is too long'));
    }
    return new Promise<LogFrame>((resolve, reject) => {
      this.#queue.push({ table, columns, rows, data, resolve, reject });
      this.#schedulePump();
    });
  }

  /** Records that the block `intent` is about to be applied (before its inserts start). */
  async beginApply(intent: ApplyIntent): Promise<void> {
    await writeStateFile(
      this.#options.dir,
      { logId: this.logId, applied: intent.from, intent },
      this.#options.fsync,
    );
  }

  /** Records that everything up to `to` is in the tables, and removes the segments it covers. */
  async endApply(to: LogPosition): Promise<void> {
    await writeStateFile(
      this.#options.dir,
      { logId: this.logId, applied: to, intent: null },
      this.#options.fsync,
    );
    const done = (await listSegments(this.#options.dir)).filter((s) => s < to.segment);
    await Promise.all(done.map((s) => rm(join(this.#options.dir, segmentName(s)), { force: true })));
  }

  /** Waits for the appends already made to be written (or fail), then closes the file. */
  async close(): Promise<void> {
    this.#closed = true;
    if (!this.#drained()) await new Promise<void>((resolve) => this.#drainWaiters.push(resolve));
    try {
      await this.#fh.close();
    } finally {
      await this.#io.close();
    }
  }

  #drained(): boolean {
    return this.#queue.length === 0 && this.#inFlight.length === 0 && !this.#pumpQueued && !this.#paused;
  }

  /** Runs `#pump` after the current synchronous stretch, so the appends made in it share one write. */
  #schedulePump(): void {
    if (this.#pumpQueued) return;
    this.#pumpQueued = true;
    queueMicrotask(() => {
      this.#pumpQueued = false;
      this.#pump();
    });
  }

  /** Starts the next commit if one may start; answers close() once there is nothing left. */
  #pump(): void {
    if (this.#failed) {
      const queued = this.#queue;
      this.#queue = [];
      for (const a of queued) a.reject(this.#failed);
    }
    const halted = this.#inFlight.some((c) => c.failed);
    if (
      this.#queue.length > 0 &&
      !this.#paused &&
      !halted &&
      this.#inFlight.length < this.#options.maxInFlight
    ) {
      if (this.#offset < this.#options.segmentBytes) this.#start();
      else if (this.#inFlight.length === 0) this.#pause(this.#rotate());
      // Otherwise the segment rotates once the commits under way are done (`#settle` pumps again).
    }
    if (this.#drained()) for (const resolve of this.#drainWaiters.splice(0)) resolve();
  }

  /** Hands what is queued to the io as one commit, at the end of the log. */
  #start(): void {
    const batch = this.#queue;
    this.#queue = [];
    const parts: Buffer[] = [];
    const frames: LogFrame[] = [];
    const start = this.#offset;
    let offset = start;
    for (const a of batch) {
      const target = targetBytes(a.table, a.columns);
      const head = Buffer.allocUnsafe(HEADER + target.length + 4);
      const payloadLength = target.length + 4 + a.data.length;
      target.copy(head, HEADER);
      head.writeUInt32LE(a.rows, HEADER + target.length);
      const crc = crc32(a.data, crc32(head.subarray(HEADER)));
      head.writeUInt32LE(payloadLength, 0);
      head.writeUInt32LE(crc, 4);
      parts.push(head, a.data);
      offset += HEADER + payloadLength;
      frames.push({
        table: a.table,
        columns: a.columns,
        rows: a.rows,
        data: a.data,
        end: { segment: this.#segment, offset },
      });
    }
    this.#offset = offset;
    const commit: Commit = { batch, frames, start, settled: false, failed: false, error: undefined };
    this.#inFlight.push(commit);
    this.#io.commit(this.#fh.fd, parts, start, this.#options.fsync, (err) => {
      commit.settled = true;
      if (err) {
        commit.failed = true;
        commit.error = err;
      }
      this.#settle();
    });
  }

  /**
   * Answers the commits at the head of the log that are done. A failed commit leaves a gap that recovery
   * would stop at, so it and every commit after it are cut off the file once all have returned, and
   * their appends rejected; the log then goes on from where the last good commit ended.
   */
  #settle(): void {
    while (this.#inFlight.length > 0 && this.#inFlight[0]!.settled && !this.#inFlight[0]!.failed) {
      const done = this.#inFlight.shift()!;
      for (const [i, a] of done.batch.entries()) a.resolve(done.frames[i]!);
    }
    const failed = this.#inFlight.find((c) => c.failed);
    if (failed && this.#inFlight.every((c) => c.settled)) {
      const lost = this.#inFlight;
      this.#inFlight = [];
      const head = lost[0]!;
      this.#offset = head.start;
      this.#pause(
        this.#fh.truncate(head.start).then(
          () => undefined,
          (e: unknown) => {
            this.#failed = new Error('the commit log cannot be written', { cause: e });
          },
        ),
        () => {
          for (const c of lost) for (const a of c.batch) a.reject(c.error ?? failed.error);
        },
      );
      return;
    }
    this.#pump();
  }

  /** Starts no commit until `work` is done; then runs `after` and goes on. */
  #pause(work: Promise<void>, after?: () => void): void {
    this.#paused = true;
    void work.then(() => {
      this.#paused = false;
      after?.();
      this.#pump();
    });
  }

  /** Goes on in a new segment; a segment that cannot be made fails the log. */
  async #rotate(): Promise<void> {
    try {
      await this.#fh.close();
      this.#segment += 1;
      this.#offset = 0;
      this.#fh = await open(join(this.#options.dir, segmentName(this.#segment)), 'wx');
    } catch (err) {
      this.#failed = new Error('the commit log cannot start a new segment', { cause: err });
    }
  }
}

async function writeStateFile(dir: string, state: State, fsync: boolean): Promise<void> {
  const path = join(dir, 'state.json');
  const tmp = `${path}.tmp`;
  const fh = await open(tmp, 'w');
  try {
    await fh.writeFile(JSON.stringify(state));
    if (fsync) await fh.datasync();
  } finally {
    await fh.close();
  }
  await rename(tmp, path);
}

async function readState(dir: string): Promise<State> {
  try {
    const raw = JSON.parse(await readFile(join(dir, 'state.json'), 'utf8')) as Partial<State>;
    return { logId: raw.logId ?? '', applied: raw.applied ?? START, intent: raw.intent ?? null };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { logId: '', applied: START, intent: null };
    throw err;
  }
}

async function listSegments(dir: string): Promise<number[]> {
  return (await readdir(dir))
    .filter((f) => /^\d{20}\.log$/.test(f))
    .map((f) => Number(f.slice(0, 20)))
    .sort((a, b) => a - b);
}

/** Parses frames from `from`; stops at the first incomplete or corrupt one and says where. */
export function readFrames(
  bytes: Buffer,
  segment: number,
  from: number,
): { frames: LogFrame[]; validEnd: number } {
  const frames: LogFrame[] = [];
  let at = from;
  while (at + HEADER <= bytes.length) {
    const length = bytes.readUInt32LE(at);
    const crc = bytes.readUInt32LE(at + 4);
    const end = at + HEADER + length;
    if (length < 6 || end > bytes.length) break;
    const payload = bytes.subarray(at + HEADER, end);
    if (crc32(payload) !== crc) break;
    const target = readTarget(payload);
    if (target === undefined || target.length + 4 > payload.length) break;
    const rows = payload.readUInt32LE(target.length);
    // A copy, so the segment's buffer is not kept alive by one frame.
    const data = Buffer.from(payload.subarray(target.length + 4));
    frames.push({ table: target.table, columns: target.columns, rows, data, end: { segment, offset: end } });
    at = end;
  }
  return { frames, validEnd: at };
}

/** A frame's target as written (see the file's comment): the table, and the columns of rows given as values. */
function targetBytes(table: string, columns: readonly string[] | undefined): Buffer {
  const name = Buffer.from(table);
  if (columns === undefined) return Buffer.concat([Buffer.from([name.length]), name]);
  const list = Buffer.from(columns.join(','));
  const out = Buffer.allocUnsafe(2 + name.length + 2 + list.length);
  out.writeUInt8(0, 0);
  out.writeUInt8(name.length, 1);
  name.copy(out, 2);
  out.writeUInt16LE(list.length, 2 + name.length);
  list.copy(out, 4 + name.length);
  return out;
}

/** The target at the start of a payload and the bytes it took; undefined when they run past the payload. */
function readTarget(
  payload: Buffer,
): { table: string; columns: readonly string[] | undefined; length: number } | undefined {
  const first = payload.readUInt8(0);
  if (first > 0) {
    if (1 + first > payload.length) return undefined;
    return { table: payload.subarray(1, 1 + first).toString(), columns: undefined, length: 1 + first };
  }
  if (payload.length < 2) return undefined;
  const nameLength = payload.readUInt8(1);
  if (4 + nameLength > payload.length) return undefined;
  const listLength = payload.readUInt16LE(2 + nameLength);
  const length = 4 + nameLength + listLength;
  if (nameLength === 0 || listLength === 0 || length > payload.length) return undefined;
  return {
    table: payload.subarray(2, 2 + nameLength).toString(),
    columns: payload
      .subarray(4 + nameLength, length)
      .toString()
      .split(','),
    length,
  };
}
