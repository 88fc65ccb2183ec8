/**
 * A table's memory in the query pool against its Arrow size. The pool's figure is the gauge
 * `weir_materialized_bytes` of GET /metrics (what the actors count against WEIR_MATERIALIZED_MEMORY_MB), read
 * while the pool holds exactly this one table (`weir_materialized_tables` 1). The Arrow size is measured here,
 * apart from the pool's code: the served Parquet object, read from the data directory's `objects/` folder,
 * is decoded whole with parquet-wasm into Arrow IPC, read with apache-arrow, and the byte lengths of every
 * column's buffers (values, offsets, validity, type ids, children's too) are summed — the bytes the columns
 * need, without the IPC stream's messages and padding.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tableFromIPC, type Data } from 'apache-arrow';
import { readParquet } from 'parquet-wasm';

export interface MemoryResult {
  readonly objectKey: string;
  readonly parquetBytes: number;
  readonly rows: number;
  readonly columns: number;
  readonly batches: number;
  /** The sum of the columns' Arrow buffers, decoded here. */
  readonly arrowBytes: number;
  /** `weir_materialized_bytes` and `weir_materialized_tables` from GET /metrics. */
  readonly poolBytes: number;
  readonly poolTables: number;
}

export function measureMemory(dataDir: string, objectKey: string, metricsText: string): MemoryResult {
  const parquet = readFileSync(join(dataDir, 'objects', objectKey));
  const table = tableFromIPC(readParquet(parquet).intoIPCStream());
  let arrowBytes = 0;
  const walk = (data: Data): void => {
    for (const buffer of [data.values, data.valueOffsets, data.nullBitmap, data.typeIds] as unknown[])
      arrowBytes += ArrayBuffer.isView(buffer) ? buffer.byteLength : 0;
    for (const child of data.children) walk(child);
  };
  for (const batch of table.batches) walk(batch.data);
  return {
    objectKey,
    parquetBytes: parquet.byteLength,
    rows: table.numRows,
    columns: table.numCols,
    batches: table.batches.length,
    arrowBytes,
    poolBytes: gauge(metricsText, 'weir_materialized_bytes'),
    poolTables: gauge(metricsText, 'weir_materialized_tables'),
  };
}

function gauge(text: string, name: string): number {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  if (!m) throw new Error(`GET /metrics has no ${name}`);
  return Number(m[1]);
}
