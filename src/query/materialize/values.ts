/**
 * Values of a stored table as a served run reads them: Arrow values (read from the Parquet the engine wrote)
 * turned into the JSON a direct run answers for the same ClickHouse type, values compared as ClickHouse
 * compares them, a run's variable read as a value of its column's type, and times moved to their bucket.
 *
 * How the engine's Parquet reads back (measured on chDB 3.4 through parquet-wasm and apache-arrow): Date,
 * DateTime and DateTime64 as milliseconds since the epoch (a DateTime64(6)'s microseconds as the fraction),
 * 64-bit integers as bigints, UUID and FixedString as bytes, an Enum as its name's bytes, a Decimal as its
 * unscaled integer, arrays as vectors, tuples and maps as rows.
 */
import type { ParamValue } from '../clickhouse/variables.ts';
import type { Bucket } from './serving.ts';

const baseTypes = new Map<string, string>();

/** A ClickHouse type without the wrappers that change nothing of how a value reads (memoised: hot path). */
export function baseType(type: string): string {
  let t = baseTypes.get(type);
  if (t !== undefined) return t;
  t = type.trim();
  const WRAPPED = /^(?:Nullable|LowCardinality)\((.*)\)$/;
  for (let m = WRAPPED.exec(t); m; m = WRAPPED.exec(t)) t = m[1]!.trim();
  if (baseTypes.size < 10_000) baseTypes.set(type, t);
  return t;
}

export type ValueKind = 'time' | 'number' | 'string' | 'bool' | 'other';

export function kindOf(type: string): ValueKind {
  const t = baseType(type);
  if (/^Date(32|Time|Time64)?\b/.test(t)) return 'time';
  if (/^(U?Int\d+|Float\d+|BFloat16|Decimal)/.test(t)) return 'number';
  if (/^(String|FixedString|Enum|UUID)/.test(t)) return 'string';
  if (t === 'Bool') return 'bool';
  return 'other';
}

/** A stored value in a form that compares as ClickHouse compares: times as integer microseconds. */
export function comparable(v: unknown, kind: ValueKind, type: string): unknown {
  if (v === null || v === undefined) return null;
  if (kind === 'time') return Math.round((v as number) * 1000);
  if (kind === 'number' && (typeof v === 'number' || typeof v === 'bigint')) return v;
  if (kind === 'string' || kind === 'number') return toJson(v, type);
  return v;
}

const UTF8 = new TextDecoder();

/** What a direct run answers for a value of `type` (JSONCompact, 64-bit integers made numbers when exact). */
export function toJson(v: unknown, type: string): unknown {
  if (v === null || v === undefined) return null;
  const t = baseType(type);
  if (typeof v === 'number') {
    if (/^Date(32)?$/.test(t)) return formatTime(Math.round(v * 1000)).slice(0, 10);
    if (t.startsWith('DateTime64')) {
      const precision = Number(/^DateTime64\((\d+)/.exec(t)?.[1] ?? '3');
      const text = formatTime(Math.round(v * 1000));
      return precision === 0
        ? text.slice(0, 19)
        : text.slice(0, 20 + Math.min(precision, 6)).padEnd(20 + precision, '0');
    }
    if (t.startsWith('DateTime')) return formatTime(Math.round(v * 1000)).slice(0, 19);
    if (!Number.isFinite(v)) return null;
    return t === 'Float32' ? shortestFloat32(v) : v;
  }
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : String(v);
  if (typeof v === 'string' || typeof v === 'boolean') return v;
  if (v instanceof Uint8Array) {
    if (t === 'UUID') return uuid(v);
    return UTF8.decode(v);
  }
  if (t.startsWith('Decimal')) return decimal(v, t);
  const inner = /^Array\((.*)\)$/.exec(t)?.[1];
  if (inner !== undefined && isIterable(v)) return [...v].map((x) => toJson(x, inner));
  if (t.startsWith('Tuple') && hasToJSON(v)) return Object.values(v.toJSON() as object);
  if (hasToJSON(v)) return v.toJSON();
  return v;
}

/** `YYYY-MM-DD HH:MM:SS.ffffff` (UTC) of integer microseconds since the epoch. */
function formatTime(us: number): string {
  const ms = Math.floor(us / 1000);
  const iso = new Date(ms).toISOString();
  const micros = String(((us % 1_000_000) + 1_000_000) % 1_000_000).padStart(6, '0');
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}.${micros}`;
}

function shortestFloat32(v: number): number {
  const f = Math.fround(v);
  for (let p = 1; p < 10; p++) {
    const n = Number(f.toPrecision(p));
    if (Math.fround(n) === f) return n;
  }
  return f;
}

function uuid(b: Uint8Array): string {
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function decimal(v: unknown, type: string): number {
  const m = /^Decimal(?:\d+)?\((?:\d+\s*,\s*)?(\d+)\)$/.exec(type);
  const scale = Number(m?.[1] ?? 0);
  return Number(String(v)) / 10 ** scale;
}

function isIterable(v: unknown): v is Iterable<unknown> {
  return typeof v === 'object' && v !== null && Symbol.iterator in v;
}

function hasToJSON(v: unknown): v is { toJSON(): unknown } {
  return typeof v === 'object' && v !== null && typeof (v as { toJSON?: unknown }).toJSON === 'function';
}

/**
 * Orders two comparable values as ClickHouse does: numbers (and bigints) by value, strings by their UTF-8
 * bytes (code points: JavaScript's own order is of UTF-16 units), false before true. Neither is null.
 */
export function compare(a: unknown, b: unknown): number {
  if (typeof a === 'string' && typeof b === 'string') return compareUtf8(a, b);
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  if ((typeof a === 'number' || typeof a === 'bigint') && (typeof b === 'number' || typeof b === 'bigint')) {
    if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) ? (Number.isNaN(b) ? 0 : 1) : -1;
    return a < b ? -1 : a > b ? 1 : 0;
  }
  const x = JSON.stringify(a);
  const y = JSON.stringify(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

function compareUtf8(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(i)!;
    if (x !== y) return x < y ? -1 : 1;
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}

/**
 * A run's value as its column compares it, or undefined when it cannot be one: a time (a date, or a date
 * and time in UTC, as ClickHouse reads text for a time column), a number, a string or a boolean.
 */
export function variableAs(value: ParamValue, kind: ValueKind): unknown {
  if (value === null) return null;
  if (Array.isArray(value)) return undefined;
  switch (kind) {
    case 'time':
      if (typeof value === 'number') return Math.round(value * 1_000_000);
      return typeof value === 'string' ? parseTime(value) : undefined;
    case 'number': {
      const n = typeof value === 'string' && value.trim() === '' ? Number.NaN : Number(value);
      return Number.isNaN(n) ? undefined : n;
    }
    case 'string':
      return String(value);
    case 'bool':
      return value === true || value === 'true' || value === 1
        ? true
        : value === false || value === 'false' || value === 0
          ? false
          : undefined;
    default:
      return value;
  }
}

const TIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?(Z|[+-]\d{2}:?\d{2})?$/;

/** Integer microseconds since the epoch of `YYYY-MM-DD[ HH:MM[:SS[.f]]]`, UTC unless an offset is given. */
export function parseTime(text: string): number | undefined {
  const m = TIME.exec(text.trim());
  if (!m) return undefined;
  const ms = Date.UTC(
    Number(m[1]),
    Number(m[2]) - 1,
    Number(m[3]),
    Number(m[4] ?? 0),
    Number(m[5] ?? 0),
    Number(m[6] ?? 0),
  );
  if (Number.isNaN(ms)) return undefined;
  let us = ms * 1000 + Number((m[7] ?? '').padEnd(6, '0').slice(0, 6) || 0);
  const zone = m[8];
  if (zone && zone !== 'Z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    us -= sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2))) * 60_000_000;
  }
  return us;
}

/** The start of the bucket holding a time (integer microseconds, UTC); weeks start on Sunday. */
export function bucketStart(us: number, bucket: Bucket): number {
  const ms = Math.floor(us / 1000);
  const day = Math.floor(ms / 86_400_000) * 86_400_000;
  switch (bucket) {
    case 'hour':
      return Math.floor(ms / 3_600_000) * 3_600_000_000;
    case 'day':
      return day * 1000;
    case 'week':
      return (day - new Date(day).getUTCDay() * 86_400_000) * 1000;
    case 'month': {
      const d = new Date(ms);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) * 1000;
    }
  }
}

/** The start of the bucket after the one starting at `start` (integer microseconds). */
export function nextBucket(start: number, bucket: Bucket): number {
  const ms = start / 1000;
  switch (bucket) {
    case 'hour':
      return start + 3_600_000_000;
    case 'day':
      return start + 86_400_000_000;
    case 'week':
      return start + 7 * 86_400_000_000;
    case 'month': {
      const d = new Date(ms);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) * 1000;
    }
  }
}
