/**
 * A held table's columns made fast to read, once, for `executeServing`. Reading an Arrow vector row by row is
 * slow (`Vector.get` finds the batch, goes through a visitor, decodes UTF-8, makes bigints), and a run reads
 * every candidate row of its filters' columns: that was most of a materialized run's time. Prepared when the actor loads the table (or on a table's first run), a run reads arrays.
 *
 * Two forms, chosen by the Arrow type and the values, not by the plan (the actor loads a table before it
 * sees a plan):
 * - numbers (integers, floats, dates and times): read in place from Arrow's own buffers, no copy; a 64-bit
 *   integer as two 32-bit words into a number (as `toJson` makes it), a time as the milliseconds Arrow makes
 *   of it. Every row is read once at load and compared with `Vector.get`: a column with any difference (an
 *   integer past 2^53) is left to Arrow. Sums over 64-bit integers go exact (bigints) again past 2^53.
 * - strings: a code per row into the column's distinct values, and the rows of each code (an index for
 *   equality filters, in row order).
 * Other columns (bytes, UUIDs, arrays, tuples, decimals, booleans) are read from Arrow as before.
 *
 * Memory: only strings take any (codes, distinct values, index), counted with the table (`bytes`) within a
 * budget its loader gives (so a table stays within twice its Arrow size); a column over it is left to Arrow.
 */
import { DataType, DateUnit, Precision, TimeUnit, type Data, type Table, type Vector } from 'apache-arrow';
import { baseType, comparable, kindOf, toJson, type ValueKind } from './values.ts';

interface NumberChunk {
  /** The table's first row in this batch. */
  readonly start: number;
  /** The batch's i-th stored number (a 64-bit integer as a number). */
  readonly read: (i: number) => number;
  readonly offset: number;
  /** Arrow's validity bits; null when no row of the batch is NULL. */
  readonly bitmap: Uint8Array | null;
}

/**
 * Numbers are read from Arrow's own buffers, one batch after another: nothing is copied (a copy would be as
 * large as the column), and a read is an index and a conversion, not `Vector.get`'s search and visitor.
 */
export interface NumberColumn {
  readonly form: 'numbers';
  readonly chunks: readonly NumberChunk[];
  readonly convert: (x: number) => number;
  /** The values are 64-bit integers (bigints to Arrow): sums of them must stay exact. */
  readonly bigints: boolean;
}

export interface StringColumn {
  readonly form: 'strings';
  /** Each row's index into `dict`; 0 is NULL. */
  readonly codes: Uint8Array | Uint16Array | Uint32Array;
  readonly dict: readonly (string | null)[];
  readonly lookup: ReadonlyMap<string, number>;
  /** The rows of code c are `rows[starts[c]..starts[c+1]]`, ascending; null when the index did not fit. */
  readonly rows: Uint32Array | null;
  readonly starts: Uint32Array | null;
}

export type DecodedColumn = NumberColumn | StringColumn;

export interface DecodedTable {
  /** By stored column index; null: read from Arrow. */
  readonly columns: readonly (DecodedColumn | null)[];
  /** Bytes the decoded forms hold (strings estimated as V8 holds them). */
  readonly bytes: number;
}

const decoded = new WeakMap<Table, DecodedTable>();

/**
 * Decodes the table's columns, in order, while they fit in `budget` bytes, and keeps them with the table
 * (a WeakMap: they go when the table goes). Decoding again returns what was decoded first.
 */
export function decodeTable(table: Table, budget: number): DecodedTable {
  const known = decoded.get(table);
  if (known) return known;
  const columns: (DecodedColumn | null)[] = [];
  let bytes = 0;
  for (let i = 0; i < table.numCols; i++) {
    const column = decodeColumn(table.getChildAt(i)!, budget - bytes);
    columns.push(column?.column ?? null);
    bytes += column?.bytes ?? 0;
  }
  const result = { columns, bytes };
  decoded.set(table, result);
  return result;
}

/** The table's decoded columns; a table its loader did not decode gets as much as its Arrow size again. */
export function decodedTable(table: Table, arrowBytes: () => number): DecodedTable {
  return decoded.get(table) ?? decodeTable(table, arrowBytes());
}

function decodeColumn(vector: Vector, budget: number): { column: DecodedColumn; bytes: number } | null {
  const numbers = numberColumn(vector);
  if (numbers) return { column: numbers, bytes: 0 };
  if (budget <= 0) return null;
  // The iterator answers what `get` answers, a batch at a time (no search for each row's batch).
  const raw: (string | null)[] = [];
  for (const v of vector as Iterable<unknown>) {
    if (typeof v !== 'string' && v !== null && v !== undefined) return null;
    raw.push(v ?? null);
  }
  return stringColumn(raw, budget);
}

/**
 * What `Vector.get` makes of a stored number of the column's type (checked against it at load). A 64-bit
 * integer is read as two 32-bit words into a number, exact up to 2^53 (bigints would be made at each read);
 * a time in microseconds is split as Arrow splits it, without its bigint division.
 */
type Convert = (x: number) => number;

const converts = {
  plain: (x) => x,
  second: (x) => 1000 * x,
  micro: (x) => {
    const r = x % 1000;
    return (x - r) / 1000 + r / 1000;
  },
  nano: (x) => {
    const r = x % 1_000_000;
    return (x - r) / 1_000_000 + r / 1_000_000;
  },
  day: (x) => 86_400_000 * x,
} satisfies Record<string, Convert>;

function convertOf(type: DataType): { convert: Convert; int64: 'signed' | 'unsigned' | null } | null {
  if (DataType.isInt(type)) {
    const int64 = type.bitWidth !== 64 ? null : type.isSigned ? 'signed' : 'unsigned';
    return { convert: converts.plain, int64 };
  }
  if (DataType.isFloat(type))
    return type.precision === Precision.HALF ? null : { convert: converts.plain, int64: null };
  if (DataType.isDate(type))
    return type.unit === DateUnit.DAY
      ? { convert: converts.day, int64: null }
      : { convert: converts.plain, int64: 'signed' };
  if (!DataType.isTimestamp(type)) return null;
  const convert =
    type.unit === TimeUnit.SECOND
      ? converts.second
      : type.unit === TimeUnit.MILLISECOND
        ? converts.plain
        : type.unit === TimeUnit.MICROSECOND
          ? converts.micro
          : converts.nano;
  return { convert, int64: 'signed' };
}

function numberColumn(vector: Vector): NumberColumn | null {
  const as = convertOf(vector.type as DataType);
  if (!as) return null;
  const chunks: NumberChunk[] = [];
  let start = 0;
  for (const data of vector.data) {
    const values = data.values as ArrayLike<number> & ArrayBufferView;
    const stride = data.stride;
    let read: (i: number) => number;
    if (as.int64 === null) read = (i) => values[stride * i]!;
    else {
      // Little-endian words, as Arrow's buffers are on every platform Node runs on (checked below).
      const words = new Int32Array(values.buffer, values.byteOffset, (values.byteLength >> 3) * 2);
      read =
        as.int64 === 'signed'
          ? (i) => words[2 * i + 1]! * 4294967296 + (words[2 * i]! >>> 0)
          : (i) => (words[2 * i + 1]! >>> 0) * 4294967296 + (words[2 * i]! >>> 0);
    }
    const nulls = data.nullable && data.nullCount > 0;
    chunks.push({ start, read, offset: data.offset, bitmap: nulls ? data.nullBitmap : null });
    start += data.length;
  }
  const column: NumberColumn = {
    form: 'numbers',
    chunks,
    convert: as.convert,
    bigints: DataType.isInt(vector.type) && as.int64 !== null,
  };
  // Read every row as a run will and compare with what Arrow reads: any difference (a 64-bit integer past
  // 2^53, a layout not foreseen) leaves the column to Arrow.
  const read = numberAt(column);
  let row = 0;
  for (const v of vector as Iterable<unknown>) {
    const mine = read(row++);
    const same =
      typeof v === 'bigint'
        ? Number.isSafeInteger(Number(v)) && mine === Number(v)
        : Object.is(mine, v ?? null);
    if (!same) return null;
  }
  return column;
}

/** The value of a row of a numbers column: its batch's buffer read as `Vector.get` reads it. */
export function numberAt(column: NumberColumn): (row: number) => number | null {
  const { chunks, convert } = column;
  const at = (chunk: NumberChunk, i: number): number | null => {
    if (chunk.bitmap) {
      const pos = chunk.offset + i;
      if ((chunk.bitmap[pos >> 3]! & (1 << (pos & 7))) === 0) return null;
    }
    return convert(chunk.read(i));
  };
  if (chunks.length === 1) {
    const only = chunks[0]!;
    return (row) => at(only, row);
  }
  return (row) => {
    // The last batch starting at or before the row (batches are few: one a row group).
    let lo = 0;
    let hi = chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (chunks[mid]!.start <= row) lo = mid;
      else hi = mid - 1;
    }
    const chunk = chunks[lo]!;
    return at(chunk, row - chunk.start);
  };
}

function stringColumn(
  raw: readonly (string | null)[],
  budget: number,
): { column: StringColumn; bytes: number } | null {
  const n = raw.length;
  const dict: (string | null)[] = [null];
  const lookup = new Map<string, number>();
  const all = new Uint32Array(n);
  // Each distinct string as V8 holds it (a header, its characters, its slots in `dict` and `lookup`).
  let dictBytes = 8;
  for (let row = 0; row < n; row++) {
    const v = raw[row];
    if (v === null || v === undefined) continue;
    let code = lookup.get(v);
    if (code === undefined) {
      code = dict.length;
      dict.push(v);
      lookup.set(v, code);
      // eslint-disable-next-line no-control-regex -- one byte a character while every one is Latin-1
      const width = /^[\u0000-\u00ff]*$/.test(v) ? 1 : 2;
      dictBytes += 16 + Math.ceil((v.length * width) / 8) * 8 + 8 + 40;
      if (dictBytes > budget) return null;
    }
    all[row] = code;
  }
  const codes =
    dict.length <= 0x100 ? new Uint8Array(all) : dict.length <= 0x10000 ? new Uint16Array(all) : all;
  let bytes = codes.byteLength + dictBytes;
  if (bytes > budget) return null;
  let rows: Uint32Array | null = null;
  let starts: Uint32Array | null = null;
  if (bytes + 4 * (n + dict.length + 1) <= budget) {
    // A counting sort of the rows by code: each code's rows stay ascending, as a scan would keep them.
    starts = new Uint32Array(dict.length + 1);
    for (let row = 0; row < n; row++) starts[codes[row]! + 1]!++;
    for (let c = 0; c < dict.length; c++) starts[c + 1]! += starts[c]!;
    const next = starts.slice(0, dict.length);
    rows = new Uint32Array(n);
    for (let row = 0; row < n; row++) rows[next[codes[row]!]!++] = row;
    bytes += rows.byteLength + starts.byteLength;
  }
  return { column: { form: 'strings', codes, dict, lookup, rows, starts }, bytes };
}

/**
 * A stored column as a run reads it, for the ClickHouse type its plan gives: decoded when it was, from Arrow
 * otherwise. Each answers what `comparable` and `toJson` answer for the value `Vector.get` reads.
 */
export interface ColumnReader {
  readonly kind: ValueKind;
  /** The value as `Vector.get` reads it (exact 64-bit integers as numbers, when decoded). */
  raw(row: number): unknown;
  cmp(row: number): unknown;
  json(row: number): unknown;
  /** Its values are 64-bit integers: a sum must stay exact past 2^53. */
  readonly bigints: boolean;
  /** The decoded strings, when the column's values compare as strings (for a filter's fast paths). */
  readonly strings: StringColumn | null;
  /** Read from decoded arrays, not from Arrow. */
  readonly decoded: boolean;
}

export function columnReader(vector: () => Vector, column: DecodedColumn | null, type: string): ColumnReader {
  const kind = kindOf(type);
  if (column === null) {
    const v = vector();
    const raw = (row: number): unknown => v.get(row);
    return {
      kind,
      raw,
      cmp: (row) => comparable(raw(row), kind, type),
      json: (row) => toJson(raw(row), type),
      // Arrow's 64-bit integers are bigints already, and sums of them exact.
      bigints: false,
      strings: null,
      decoded: false,
    };
  }
  if (column.form === 'strings') {
    const { codes, dict } = column;
    const raw = (row: number): string | null => dict[codes[row]!]!;
    // A string compares and answers as itself (comparable and toJson both return it).
    const plain = kind === 'string';
    return {
      kind,
      raw,
      cmp: plain ? raw : (row) => comparable(raw(row), kind, type),
      json: plain ? raw : (row) => toJson(raw(row), type),
      bigints: false,
      strings: plain ? column : null,
      decoded: true,
    };
  }
  const raw = numberAt(column);
  // What comparable and toJson do with a number of this kind, without their per-value type tests.
  const plain = kind === 'number' && baseType(type) !== 'Float32';
  return {
    kind,
    raw,
    cmp:
      kind === 'time'
        ? (row) => {
            const v = raw(row);
            return v === null ? null : Math.round(v * 1000);
          }
        : kind === 'number'
          ? raw
          : (row) => comparable(raw(row), kind, type),
    json: plain
      ? (row) => {
          const v = raw(row);
          return v === null || !Number.isFinite(v) ? null : v;
        }
      : (row) => toJson(raw(row), type),
    bigints: column.bigints,
    strings: null,
    decoded: true,
  };
}

/** Bytes of a table's Arrow buffers (values, offsets, validity), the size its memory is judged against. */
export function arrowSize(table: Table): number {
  let size = 0;
  const walk = (data: Data): void => {
    const buffers: (ArrayBufferView | undefined)[] = [
      data.values as ArrayBufferView | undefined,
      data.valueOffsets as ArrayBufferView | undefined,
      data.nullBitmap,
      data.typeIds as ArrayBufferView | undefined,
    ];
    for (const b of buffers) size += b?.byteLength ?? 0;
    for (const child of data.children) walk(child);
  };
  for (const batch of table.batches) walk(batch.data);
  return size;
}
