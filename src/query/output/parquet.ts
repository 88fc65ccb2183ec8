/**
 * The Parquet encoding of a result: its Arrow IPC stream (arrow.ts, the same types) written by parquet-wasm
 * with zstd, as the engine writes materializations. Built whole in memory: a Parquet file ends in its footer,
 * which names every row group, so nothing of it is sent before all is made.
 */
import { Compression, Table, WriterPropertiesBuilder, writeParquet } from 'parquet-wasm';
import { arrowStreamBytes } from './arrow.ts';
import type { TabularResult } from './formats.ts';

/** Rows in one row group; the same as the engine's materializations (writer.ts). */
const ROW_GROUP_ROWS = 65_536;

export function parquetBytes(result: TabularResult): Uint8Array {
  const table = Table.fromIPCStream(arrowStreamBytes(result));
  const properties = new WriterPropertiesBuilder()
    .setCompression(Compression.ZSTD)
    .setMaxRowGroupSize(ROW_GROUP_ROWS)
    .build();
  // writeParquet takes (and frees) the table and the properties.
  return writeParquet(table, properties);
}
