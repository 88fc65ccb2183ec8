import { open, readFile, rename, rm } from 'node:fs/promises';

/** How far an import got: every row before `row` of file `file` (and every earlier file) was answered. */
export interface Checkpoint {
  readonly version: 1;
  /** The run's inputs, as resolved: a checkpoint is only taken up by the same inputs. */
  readonly inputs: readonly string[];
  readonly file: number;
  readonly row: number;
  /** Byte offset of that row in an uncompressed JSON-lines file, where a resume seeks. */
  readonly offset?: number;
  readonly updatedAt: string;
}

/** Where the checkpoint of `path` goes when `--checkpoint` does not say: beside the input, named after it. */
export function defaultCheckpointPath(path: string): string | undefined {
  if (path === '-') return undefined;
  return `${path.replace(/\/+$/, '')}.weir-import.json`;
}

/** The checkpoint at `path`, or undefined when there is none; refused when it is of other inputs. */
export async function loadCheckpoint(
  path: string,
  inputs: readonly string[],
): Promise<Checkpoint | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  let cp: Partial<Checkpoint>;
  try {
    cp = JSON.parse(text) as Partial<Checkpoint>;
  } catch {
    throw new Error(`checkpoint ${path} is not JSON: delete it to start over`);
  }
  if (
    cp.version !== 1 ||
    !Array.isArray(cp.inputs) ||
    typeof cp.file !== 'number' ||
    typeof cp.row !== 'number' ||
    (cp.offset !== undefined && typeof cp.offset !== 'number')
  ) {
    throw new Error(`checkpoint ${path} is not a weir import checkpoint: delete it to start over`);
  }
  if (cp.inputs.length !== inputs.length || cp.inputs.some((p, i) => p !== inputs[i])) {
    throw new Error(
      `checkpoint ${path} is of other input files (${cp.inputs.join(', ')}): delete it to start over, or give --checkpoint`,
    );
  }
  return cp as Checkpoint;
}

/**
 * Writes the checkpoint atomically: a temporary file, flushed to disk, renamed over the old one. A crash at
 * any moment leaves either the previous checkpoint or this one, never a torn file.
 */
export async function saveCheckpoint(path: string, cp: Checkpoint): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  const file = await open(tmp, 'w', 0o644);
  try {
    await file.writeFile(`${JSON.stringify(cp)}\n`);
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(tmp, path);
}

/** Removed when the import completes: a checkpoint left means an import that did not finish. */
export async function removeCheckpoint(path: string): Promise<void> {
  await rm(path, { force: true });
}

/** Where a file's reading starts, given the checkpoint: the row (and byte offset) to start at. */
export function startOf(cp: Checkpoint | undefined, file: number): { row: number; offset?: number } | 'done' {
  if (cp === undefined || file > cp.file) return { row: 0 };
  if (file < cp.file) return 'done';
  return cp.offset === undefined ? { row: cp.row } : { row: cp.row, offset: cp.offset };
}
