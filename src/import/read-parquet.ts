import { DataType, tableFromIPC, type Field } from 'apache-arrow';
import { ParquetFile, readParquet } from 'parquet-wasm';
import type { SourceRow, StartAt } from './source-row.ts';

/**
 * The rows of a Parquet file (PostHog's batch exports write `uuid`, `event`, `distinct_id`, `timestamp`,
 * `properties` as JSON text, …; any file with those column names reads alike), from the file's bytes, held
 * in memory and decoded one row group at a time, so memory holds the file and one group's Arrow table, not the file
 * decoded; a resume skips whole groups before the row it starts at without decoding them.
 */
export async function* readParquetRows(
  file: number,
  bytes: Uint8Array,
  start: StartAt,
): AsyncGenerator<SourceRow> {
  const meta = await ParquetFile.fromFile(new Blob([bytes]));
  const groups: number[] = [];
  try {
    const md = meta.metadata();
    for (let i = 0; i < md.numRowGroups(); i++) groups.push(md.rowGroup(i).numRows());
  } finally {
    meta.free();
  }
  let first = 0;
  for (let g = 0; g < groups.length; g++) {
    const rows = groups[g]!;
    if (first + rows <= start.row) {
      first += rows;
      continue;
    }
    const table = tableFromIPC(readParquet(bytes, { rowGroups: [g] }).intoIPCStream());
    const fields = table.schema.fields;
    const columns = fields.map((f, i) => ({ name: f.name, read: reader(f), vector: table.getChildAt(i)! }));
    for (let r = 0; r < table.numRows; r++) {
      const row = first + r;
      if (row < start.row) continue;
      const value: Record<string, unknown> = {};
      for (const c of columns) {
        const v: unknown = c.vector.get(r);
        if (v !== null && v !== undefined) value[c.name] = c.read(v);
      }
      yield { kind: 'value', pos: { file, row }, value };
    }
    first += rows;
  }
}

/** How one column's Arrow values become the JSON values of an event row. */
function reader(field: Field): (v: unknown) => unknown {
  const t = field.type as DataType;
  if (DataType.isTimestamp(t) || DataType.isDate(t)) return (v) => new Date(Number(v));
  if (DataType.isFixedSizeBinary(t) && t.byteWidth === 16) return (v) => uuidText(v as Uint8Array);
  return plain;
}

function plain(v: unknown): unknown {
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  if (v instanceof Uint8Array) return Buffer.from(v).toString('utf8');
  if (typeof v === 'object' && v !== null && 'toJSON' in v) return (v as { toJSON(): unknown }).toJSON();
  return v;
}

function uuidText(b: Uint8Array): string {
  const h = Buffer.from(b).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
