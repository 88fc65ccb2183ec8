/**
 * Arrow encodings of a result: its ClickHouse types made Arrow types, its rows (the JSON values a run
 * answers) made record batches, written as an Arrow IPC stream one batch at a time.
 *
 * The types (every field nullable; `Nullable` and `LowCardinality` change nothing):
 * - `Int8`…`Int64`, `UInt8`…`UInt64`: the integer of the same width and sign; wider integers: text.
 * - `Float32`, `BFloat16`: Float32; `Float64`: Float64; `Decimal…`: Float64 (the JSON answer's number).
 * - `Bool`: Bool. `Date`, `Date32`: Date (days).
 * - `DateTime`: Timestamp(second, UTC); `DateTime64(p)`: Timestamp in milliseconds (p ≤ 3), microseconds
 *   (p ≤ 6) or nanoseconds, UTC. Either with a time zone other than UTC: its text, as the JSON shows it.
 * - `String`, `FixedString`, `UUID`, `Enum…`, `IPv4`, `IPv6`: UTF-8 text.
 * - `Array(T)`: List of T's Arrow type.
 * - anything else (tuples, maps, JSON, intervals, `Nothing`, …): UTF-8, the value's JSON text.
 */
import {
  AsyncByteQueue,
  Bool,
  DateDay,
  Field,
  Float32,
  Float64,
  Int16,
  Int32,
  Int64,
  Int8,
  List,
  RecordBatch,
  RecordBatchStreamWriter,
  Schema,
  Struct,
  TimestampMicrosecond,
  TimestampMillisecond,
  TimestampNanosecond,
  TimestampSecond,
  Uint16,
  Uint32,
  Uint64,
  Uint8,
  Utf8,
  makeData,
  type Data,
  type DataType,
} from 'apache-arrow';
import { baseType } from '../materialize/values.ts';
import { distinctNames, type BodyPieces, type TabularResult } from './formats.ts';

/**
 * Rows in one record batch: a batch is made and sent before the next is made, and the main thread does
 * nothing else while it makes one, so a batch is kept short.
 */
export const BATCH_ROWS = 16_384;

/** How one column's values become Arrow data. */
interface ColumnEncoder {
  readonly type: DataType;
  /** The data of `length` values, the i-th being `at(i)` (a JSON value of the answer). */
  data(length: number, at: (i: number) => unknown): Data;
}

/** The Arrow type a column of this ClickHouse type is encoded as. */
export function arrowTypeOf(clickhouseType: string): DataType {
  return encoderOf(clickhouseType).type;
}

/** The Arrow schema of a result: its columns (told apart, as `distinctNames` makes them) and their types. */
export function arrowSchema(result: Pick<TabularResult, 'columns' | 'types'>): Schema {
  const names = distinctNames(result.columns);
  return new Schema(names.map((name, i) => new Field(name, arrowTypeOf(result.types[i] ?? 'String'), true)));
}

/** The result's record batches of up to `BATCH_ROWS` rows, made as they are asked for. */
export function* recordBatches(result: TabularResult): Generator<RecordBatch> {
  const encoders = result.columns.map((_, i) => encoderOf(result.types[i] ?? 'String'));
  const schema = new Schema(
    distinctNames(result.columns).map((name, i) => new Field(name, encoders[i]!.type, true)),
  );
  const { rows } = result;
  for (let start = 0; start < rows.length; start += BATCH_ROWS) {
    const length = Math.min(BATCH_ROWS, rows.length - start);
    const children = encoders.map((e, c) => e.data(length, (i) => rows[start + i]![c]));
    const struct = makeData({ type: new Struct(schema.fields), length, nullCount: 0, children });
    yield new RecordBatch(schema, struct);
  }
}

/**
 * The Arrow IPC stream of a result, a piece at a time: the schema, then each record batch as it is made
 * (never the whole result at once), then the end-of-stream marker.
 */
export function arrowStreamPieces(result: TabularResult): BodyPieces {
  const sink = new CollectingSink();
  const writer = new RecordBatchStreamWriter();
  const schema = arrowSchema(result);
  // The writer writes to a sink it is given when the sink is one of Arrow's byte queues; this one keeps
  // what is written, to be taken synchronously.
  writer.reset(sink, schema);
  const batches = recordBatches(result);
  let ended = false;
  return () => {
    while (sink.pieces.length === 0 && !ended) {
      const next = batches.next();
      if (next.done) {
        writer.finish();
        ended = true;
      } else writer.write(next.value);
    }
    return sink.take();
  };
}

/** The whole Arrow IPC stream of a result, as one buffer (what the Parquet writer reads). */
export function arrowStreamBytes(result: TabularResult): Uint8Array {
  const next = arrowStreamPieces(result);
  const pieces: Uint8Array[] = [];
  for (let p = next(); p !== undefined; p = next()) pieces.push(p as Uint8Array);
  return Buffer.concat(pieces);
}

/** An Arrow byte queue that keeps what is written, taken in order by `take`. */
class CollectingSink extends AsyncByteQueue<Uint8Array> {
  pieces: Uint8Array[] = [];

  override write(value: Uint8Array | ArrayBufferView): void {
    const bytes = new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
    if (bytes.byteLength > 0) this.pieces.push(bytes);
  }

  /** What was written since the last take, as one piece; undefined when nothing was. */
  take(): Uint8Array | undefined {
    if (this.pieces.length === 0) return undefined;
    const piece = this.pieces.length === 1 ? this.pieces[0]! : Buffer.concat(this.pieces);
    this.pieces = [];
    return piece;
  }
}

const UTC_ZONES = new Set(['UTC', 'Etc/UTC', 'GMT', 'Etc/GMT', 'Universal', 'Zulu']);

function encoderOf(clickhouseType: string): ColumnEncoder {
  const t = baseType(clickhouseType);
  const int = /^(U?)Int(8|16|32|64)$/.exec(t);
  if (int) return integerEncoder(int[1] === 'U', Number(int[2]));
  if (t === 'Float32' || t === 'BFloat16') return fixed(new Float32(), Float32Array, toFloat);
  if (t === 'Float64' || /^Decimal/.test(t)) return fixed(new Float64(), Float64Array, toFloat);
  if (t === 'Bool') return boolEncoder();
  if (t === 'Date' || t === 'Date32') return fixed(new DateDay(), Int32Array, toDays);
  const time = /^DateTime(64)?(?:\((.*)\))?$/.exec(t);
  if (time) {
    const args = (time[2] ?? '').split(',').map((a) => a.trim().replace(/^'(.*)'$/, '$1'));
    const precision = time[1] ? Number(args[0] || 3) : 0;
    const zone = time[1] ? args[1] : args[0] || undefined;
    if (zone === undefined || UTC_ZONES.has(zone)) return timestampEncoder(precision);
  }
  if (/^(String|FixedString\(\d+\)|UUID|Enum(8|16)?\(.*\)|IPv4|IPv6)$/.test(t)) return utf8Encoder();
  const inner = /^Array\((.*)\)$/.exec(t)?.[1];
  if (inner !== undefined) return listEncoder(encoderOf(inner));
  return utf8Encoder();
}

function integerEncoder(unsigned: boolean, bits: number): ColumnEncoder {
  switch (bits) {
    case 8:
      return unsigned ? fixed(new Uint8(), Uint8Array, toNumber) : fixed(new Int8(), Int8Array, toNumber);
    case 16:
      return unsigned ? fixed(new Uint16(), Uint16Array, toNumber) : fixed(new Int16(), Int16Array, toNumber);
    case 32:
      return unsigned ? fixed(new Uint32(), Uint32Array, toNumber) : fixed(new Int32(), Int32Array, toNumber);
    default:
      return unsigned
        ? fixed(new Uint64(), BigUint64Array, toBigInt)
        : fixed(new Int64(), BigInt64Array, toBigInt);
  }
}

/**
 * A column of numbers in a typed array; a value `convert` cannot read is NULL. 64-bit integers go in bigint
 * arrays: the JSON answer has them as numbers, or as strings past 2^53 (exact either way).
 */
function fixed<T extends DataType, V extends number | bigint>(
  type: T,
  Values: new (n: number) => { [i: number]: V },
  convert: (v: unknown) => V | null,
): ColumnEncoder {
  return {
    type,
    data(length, at) {
      const values = new Values(length);
      const nulls = new NullBits(length);
      for (let i = 0; i < length; i++) {
        const v = convert(at(i));
        if (v === null) nulls.setNull(i);
        else values[i] = v;
      }
      return makeData({ type, length, ...nulls.props(), data: values } as never);
    },
  };
}

/** DateTime and DateTime64 (UTC): their text read as a count of the unit the precision gives. */
function timestampEncoder(precision: number): ColumnEncoder {
  const [type, perSecond] =
    precision === 0
      ? [new TimestampSecond('UTC'), 1n]
      : precision <= 3
        ? [new TimestampMillisecond('UTC'), 1_000n]
        : precision <= 6
          ? [new TimestampMicrosecond('UTC'), 1_000_000n]
          : [new TimestampNanosecond('UTC'), 1_000_000_000n];
  return {
    type,
    data(length, at) {
      const values = new BigInt64Array(length);
      const nulls = new NullBits(length);
      for (let i = 0; i < length; i++) {
        const v = timeUnits(at(i), perSecond);
        if (v === null) nulls.setNull(i);
        else values[i] = v;
      }
      return makeData({ type, length, ...nulls.props(), data: values });
    },
  };
}

function boolEncoder(): ColumnEncoder {
  const type = new Bool();
  return {
    type,
    data(length, at) {
      const values = new Uint8Array((length + 7) >> 3);
      const nulls = new NullBits(length);
      for (let i = 0; i < length; i++) {
        const v = at(i);
        if (v === null || v === undefined) nulls.setNull(i);
        else if (v === true || v === 1 || v === 'true') values[i >> 3]! |= 1 << (i & 7);
      }
      return makeData({ type, length, ...nulls.props(), data: values });
    },
  };
}

const UTF8 = new TextEncoder();

/** UTF-8 text: a string as it is, any other value as its JSON text. */
function utf8Encoder(): ColumnEncoder {
  const type = new Utf8();
  return {
    type,
    data(length, at) {
      const texts: (string | null)[] = new Array<string | null>(length);
      const nulls = new NullBits(length);
      let bytes = 0;
      for (let i = 0; i < length; i++) {
        const v = at(i);
        const text = v === null || v === undefined ? null : typeof v === 'string' ? v : JSON.stringify(v);
        texts[i] = text;
        if (text === null) nulls.setNull(i);
        else bytes += Buffer.byteLength(text);
      }
      const data = new Uint8Array(bytes);
      const valueOffsets = new Int32Array(length + 1);
      let pos = 0;
      for (let i = 0; i < length; i++) {
        const text = texts[i];
        if (text) pos += UTF8.encodeInto(text, data.subarray(pos)).written;
        valueOffsets[i + 1] = pos;
      }
      return makeData({ type, length, ...nulls.props(), valueOffsets, data });
    },
  };
}

/** A list of the element encoder's type; a value that is not an array is NULL. */
function listEncoder(element: ColumnEncoder): ColumnEncoder {
  const type = new List(new Field('item', element.type, true));
  return {
    type,
    data(length, at) {
      const valueOffsets = new Int32Array(length + 1);
      const nulls = new NullBits(length);
      const items: unknown[] = [];
      for (let i = 0; i < length; i++) {
        const v = at(i);
        if (Array.isArray(v)) for (const x of v) items.push(x);
        else nulls.setNull(i);
        valueOffsets[i + 1] = items.length;
      }
      const child = element.data(items.length, (j) => items[j]);
      return makeData({ type, length, ...nulls.props(), valueOffsets, child });
    },
  };
}

/** A validity bitmap, made only once a value is NULL. */
class NullBits {
  #bits: Uint8Array | undefined;
  #count = 0;

  constructor(private readonly length: number) {}

  setNull(i: number): void {
    this.#bits ??= new Uint8Array((this.length + 7) >> 3).fill(0xff);
    this.#bits[i >> 3]! &= ~(1 << (i & 7));
    this.#count++;
  }

  props(): { nullCount: number; nullBitmap?: Uint8Array } {
    return this.#bits ? { nullCount: this.#count, nullBitmap: this.#bits } : { nullCount: 0 };
  }
}

function toNumber(v: unknown): number | null {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v.trim() !== '') {
    const n = Number(v);
    return Number.isNaN(n) ? null : n;
  }
  if (typeof v === 'boolean') return Number(v);
  return null;
}

/** A float, with ClickHouse's text for the values JSON has no number for (`nan`, `inf`, `-inf`). */
function toFloat(v: unknown): number | null {
  if (typeof v === 'string') {
    const s = v.trim().toLowerCase();
    if (s === 'nan' || s === '-nan') return Number.NaN;
    if (s === 'inf' || s === '+inf') return Number.POSITIVE_INFINITY;
    if (s === '-inf') return Number.NEGATIVE_INFINITY;
  }
  return toNumber(v);
}

function toBigInt(v: unknown): bigint | null {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v) : null;
  if (typeof v === 'string' && /^-?\d+$/.test(v.trim())) return BigInt(v.trim());
  return null;
}

const TIME_TEXT = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?$/;

function toDays(v: unknown): number | null {
  if (typeof v !== 'string') return null;
  const m = TIME_TEXT.exec(v);
  if (!m) return null;
  return Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) / 86_400_000;
}

/** `YYYY-MM-DD HH:MM:SS[.f…]` (UTC) as a count of 1/`perSecond` s since the epoch; digits past it are cut. */
function timeUnits(v: unknown, perSecond: bigint): bigint | null {
  if (typeof v !== 'string') return null;
  const m = TIME_TEXT.exec(v);
  if (!m) return null;
  const ms = Date.UTC(
    Number(m[1]),
    Number(m[2]) - 1,
    Number(m[3]),
    Number(m[4] ?? 0),
    Number(m[5] ?? 0),
    Number(m[6] ?? 0),
  );
  if (Number.isNaN(ms)) return null;
  const nanos = BigInt((m[7] ?? '').padEnd(9, '0'));
  return BigInt(ms / 1000) * perSecond + (nanos * perSecond) / 1_000_000_000n;
}
