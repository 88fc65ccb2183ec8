import { RecordBatch, Table, tableFromIPC } from 'apache-arrow';
import { ParquetFile, readParquet } from 'parquet-wasm';
import { arrowSize, decodeTable } from '../columns.ts';

/**
 * A stored table decoded into Arrow (and its columns into arrays for the runs), and the bytes it holds (what
 * counts against the memory bound).
 */
export interface LoadedTable {
  readonly table: Table;
  /** Bytes of the buffers the table's columns are views over, and of its decoded columns. */
  readonly bytes: number;
}

/**
 * Rows in one Arrow batch. parquet-wasm's default (1024) made ~1000 batches of a million rows, and every
 * batch is a step in a scan; a row group is rarely larger than this, so a batch is mostly a row group.
 */
const BATCH_ROWS = 1 << 20;

/**
 * Decodes a Parquet file into an Arrow table. parquet-wasm (Rust's parquet crate in WebAssembly) reads every
 * codec the engine writes, several times faster than hyparquet in plain JavaScript and without its heap.
 * It decodes into its own memory and hands back Arrow IPC, which
 * apache-arrow reads without copying; so the table's memory is those IPC buffers, about its Arrow size.
 *
 * Row groups are read one at a time: WebAssembly memory grows to the largest decode and never shrinks, so
 * decoding a file whole would leave every actor holding the size of the largest file ever loaded. (Its
 * streaming reader was no answer: a damaged page made it throw out of a stream callback, past any catch.)
 *
 * Throws on bytes that are not a readable Parquet file; after such a throw the decoder's state may be broken
 * (a later good file failed too, here), so the caller must not decode again in this thread.
 */
export async function loadParquetTable(bytes: Uint8Array): Promise<LoadedTable> {
  const file = await ParquetFile.fromFile(new Blob([bytes]));
  let rowGroups: number;
  try {
    rowGroups = file.metadata().numRowGroups();
  } finally {
    file.free();
  }
  const batches: RecordBatch[] = [];
  let held = 0;
  for (let i = 0; i < rowGroups; i++) {
    const ipc = readParquet(bytes, { rowGroups: [i], batchSize: BATCH_ROWS }).intoIPCStream();
    held += ipc.byteLength;
    batches.push(...tableFromIPC(ipc).batches);
  }
  if (batches.length === 0) {
    // A file of no rows still has its columns: the schema alone makes the (empty) table.
    const ipc = readParquet(bytes, { batchSize: BATCH_ROWS }).intoIPCStream();
    const table = tableFromIPC(ipc);
    return { table, bytes: ipc.byteLength };
  }
  const table = new Table(batches);
  // Its columns prepared once for the runs (columns.ts), counted with it, within 1.5× its Arrow size: what
  // the count does not see (Arrow's objects, the heap around them) must fit under the pool's bound of 2×.
  const decoded = decodeTable(table, 1.5 * arrowSize(table) - held);
  return { table, bytes: held + decoded.bytes };
}

export { arrowSize };
