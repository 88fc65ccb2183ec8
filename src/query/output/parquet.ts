/**
 * The Parquet encoding of a result: its Arrow IPC stream (arrow.ts, the same types) written by parquet-wasm
 * with zstd, as the engine writes materializations. Built whole in memory: a Parquet file ends in its footer,
 * which names every row group, so nothing of it is sent before all is made. The Arrow stream is made a batch
 * at a time with the event loop let run between batches; the Parquet write is one step.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { Compression, Table, WriterPropertiesBuilder, writeParquet } from 'parquet-wasm';
import { arrowStreamPieces } from './arrow.ts';
import type { TabularResult } from './formats.ts';

/** Rows in one row group; the same as the engine's materializations (writer.ts). */
const ROW_GROUP_ROWS = 65_536;

export async function parquetBytes(result: TabularResult): Promise<Uint8Array> {
  const next = arrowStreamPieces(result);
  const pieces: Uint8Array[] = [];
  for (let piece = next(); piece !== undefined; piece = next()) {
    pieces.push(piece as Uint8Array);
    await nextTurn();
  }
  const table = Table.fromIPCStream(Buffer.concat(pieces));
  const properties = new WriterPropertiesBuilder()
    .setCompression(Compression.ZSTD)
    .setMaxRowGroupSize(ROW_GROUP_ROWS)
    .build();
  // writeParquet takes (and frees) the table and the properties.
  return writeParquet(table, properties);
}
