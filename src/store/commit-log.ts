/**
 * The embedded store's commit log: an append-only file of row blocks in the data directory.
 *
 * Why it exists: on this kind of machine every MergeTree insert creates a part on disk, and a part costs
 * ~15 ms of CPU, mostly in the kernel (measured: 1-row inserts into a one-column MergeTree cost 16.8 ms of
 * CPU on the ext4 data disk, 3.3 ms on tmpfs; an 8 KiB append costs 12 µs, with fdatasync ~1 ms). Committing
 * each group of rows as a part caps the embedded store at ~100 commits/s. So a commit is an append here,
 * and the applier (logged-store.ts) moves the log into the tables in large blocks.
 *
 * Layout: `<dir>/<segment>.log` files of frames, a new segment at every open and past `segmentBytes`;
 * `<dir>/state.json` records how far the tables hold the log (`applied`) and the block being applied
 * (`intent`), so recovery re-applies that block with the same deduplication token.
 *
 * Frame: u32 LE payload length, u32 LE CRC-32 of the payload, payload = u8 table-name length, table name,
 * u32 LE row count, rows (JSONEachRow, each line ending in '\n'). A torn or corrupt frame at the tail of the
 * last segment (a crash mid-write) is cut off at recovery; it was never acknowledged.
 */
import { mkdir, open, readdir, readFile, rename, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { fdatasync, writev } from 'node:fs';
import { crc32 } from 'node:zlib';
import { randomUUID } from 'node:crypto';

export interface LogPosition {
  readonly segment: number;
  readonly offset: number;
}

export interface LogFrame {
  readonly table: string;
  readonly rows: number;
  /** JSONEachRow lines, each ending in '\n'. */
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
  /** fdatasync after each write (survives power loss, ~1 ms a commit) or not (survives a crash of Weir). */
  readonly fsync: boolean;
  /** A new segment starts past this size. @default 64 MiB */
  readonly segmentBytes?: number;
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
  readonly rows: number;
  readonly data: Buffer;
  readonly resolve: (frame: LogFrame) => void;
  readonly reject: (err: unknown) => void;
}

const HEADER = 8;
const MAX_TABLE_NAME = 255;
const START: LogPosition = { segment: 0, offset: 0 };

export function comparePositions(a: LogPosition, b: LogPosition): number {
  return a.segment - b.segment || a.offset - b.offset;
}

const segmentName = (n: number): string => `${String(n).padStart(20, '0')}.log`;

export class CommitLog {
  readonly #options: Required<CommitLogOptions>;
  #fh: FileHandle;
  #segment: number;
  #offset = 0;
  #queue: QueuedAppend[] = [];
  #writing: Promise<void> | undefined;
  #failed: Error | undefined;
  #closed = false;

  /** See `State.logId`. */
  readonly logId: string;

  private constructor(options: Required<CommitLogOptions>, fh: FileHandle, segment: number, logId: string) {
    this.#options = options;
    this.#fh = fh;
    this.#segment = segment;
    this.logId = logId;
  }

  /** Opens the log in `dir` (created if missing), reading back what was written and not yet applied. */
  static async open(options: CommitLogOptions): Promise<{ log: CommitLog; recovery: Recovery }> {
    const full = { segmentBytes: 64 * 1024 * 1024, ...options };
    await mkdir(full.dir, { recursive: true });
    const state = await readState(full.dir);
    if (state.logId === '') {
      state.logId = randomUUID();
      await writeStateFile(full.dir, state, full.fsync);
    }
    const segments = await listSegments(full.dir);
    const frames: LogFrame[] = [];
    let truncatedBytes = 0;
    const corruptSegments: string[] = [];
    for (const [i, seg] of segments.entries()) {
      if (seg < state.applied.segment) continue;
      const path = join(full.dir, segmentName(seg));
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
    const fh = await open(join(full.dir, segmentName(next)), 'wx');
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
   * Appends a block of rows; resolves with its frame once written (and synced, if so configured). Appends
   * that arrive while a write is in progress go out together in the next write: a group commit.
   */
  append(table: string, rows: number, data: Buffer): Promise<LogFrame> {
    if (this.#closed) return Promise.reject(new Error('the commit log is closed'));
    if (this.#failed) return Promise.reject(this.#failed);
    if (Buffer.byteLength(table) > MAX_TABLE_NAME) return Promise.reject(new Error('table name too long'));
    return new Promise<LogFrame>((resolve, reject) => {
      this.#queue.push({ table, rows, data, resolve, reject });
      this.#writing ??= this.#writeLoop();
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

  /** Waits for writes in progress, then closes the file. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#writing;
    await this.#fh.close();
  }

  async #writeLoop(): Promise<void> {
    try {
      // Let the appends of the same synchronous stretch (a commit round of several tables) join this write.
      await Promise.resolve();
      while (this.#queue.length > 0) {
        const batch = this.#queue;
        this.#queue = [];
        await this.#write(batch);
      }
    } finally {
      this.#writing = undefined;
    }
  }

  async #write(batch: QueuedAppend[]): Promise<void> {
    if (this.#offset >= this.#options.segmentBytes) await this.#rotate();
    const parts: Buffer[] = [];
    const frames: LogFrame[] = [];
    let offset = this.#offset;
    for (const a of batch) {
      const name = Buffer.from(a.table);
      const head = Buffer.allocUnsafe(HEADER + 1 + name.length + 4);
      const payloadLength = 1 + name.length + 4 + a.data.length;
      head.writeUInt8(name.length, HEADER);
      name.copy(head, HEADER + 1);
      head.writeUInt32LE(a.rows, HEADER + 1 + name.length);
      const crc = crc32(a.data, crc32(head.subarray(HEADER)));
      head.writeUInt32LE(payloadLength, 0);
      head.writeUInt32LE(crc, 4);
      parts.push(head, a.data);
      offset += HEADER + payloadLength;
      frames.push({ table: a.table, rows: a.rows, data: a.data, end: { segment: this.#segment, offset } });
    }
    try {
      await writeAndSync(this.#fh.fd, parts, this.#offset, this.#options.fsync);
      this.#offset = offset;
    } catch (err) {
      // Leave no half-written frame behind; if even that fails, refuse further appends.
      await this.#fh.truncate(this.#offset).catch((e: unknown) => {
        this.#failed = new Error('the commit log cannot be written', { cause: e });
      });
      for (const a of batch) a.reject(err);
      return;
    }
    for (const [i, a] of batch.entries()) a.resolve(frames[i]!);
  }

  async #rotate(): Promise<void> {
    await this.#fh.close();
    this.#segment += 1;
    this.#offset = 0;
    this.#fh = await open(join(this.#options.dir, segmentName(this.#segment)), 'wx');
  }
}

/**
 * Writes `parts` at `position` (one `writev`, more only if the kernel takes less), then `fdatasync`s. The
 * position is explicit: after a failed write is cut off, the next one must start where the log ends, not
 * where the file offset was left. On the callback API, without the promise and FileHandle machinery of two
 * `fs/promises` calls per commit, which showed in a profile of single-event capture (a commit every
 * millisecond or so).
 */
function writeAndSync(fd: number, parts: Buffer[], position: number, sync: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (err: NodeJS.ErrnoException | null): void => {
      if (err) reject(err);
      else if (sync) fdatasync(fd, (e) => (e ? reject(e) : resolve()));
      else resolve();
    };
    const write = (buffers: Buffer[], at: number): void => {
      writev(fd, buffers, at, (err, written) => {
        if (err) return done(err);
        let rest = written;
        let i = 0;
        while (i < buffers.length && rest >= buffers[i]!.length) rest -= buffers[i++]!.length;
        if (i === buffers.length) return done(null);
        write([buffers[i]!.subarray(rest), ...buffers.slice(i + 1)], at + written);
      });
    };
    write(parts, position);
  });
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
    const nameLength = payload.readUInt8(0);
    if (1 + nameLength + 4 > payload.length) break;
    const table = payload.subarray(1, 1 + nameLength).toString();
    const rows = payload.readUInt32LE(1 + nameLength);
    // A copy, so the segment's buffer is not kept alive by one frame.
    const data = Buffer.from(payload.subarray(1 + nameLength + 4));
    frames.push({ table, rows, data, end: { segment, offset: end } });
    at = end;
  }
  return { frames, validEnd: at };
}
