/**
 * Fetching a run or a query in a `format` and reading its bytes back into the rows of the JSON answer, each
 * format by a reader of its own kind: csv-parse for CSV, JSON.parse line by line for NDJSON, apache-arrow's
 * tableFromIPC for Arrow, parquet-wasm (into Arrow) for Parquet. What the readers give is turned into the
 * JSON answer's values by the column's ClickHouse type, so a test compares rows with rows.
 */
import http from 'node:http';
import { DataType, TimeUnit, tableFromIPC, type Table, type Vector } from 'apache-arrow';
import { parse } from 'csv-parse/sync';
import { readParquet } from 'parquet-wasm';
import { PERSONAL_API_KEY } from './weir.ts';

export interface Fetched {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
}

/**
 * One request over a fresh connection with node:http. With `readAfterMs`, the response is not read for that
 * long: the server meets a full socket and must wait for it (back-pressure) rather than buffer the rest.
 */
export function fetchRaw(
  url: string,
  options: { method?: string; body?: unknown; readAfterMs?: number; key?: string } = {},
): Promise<Fetched> {
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: options.method ?? (body === undefined ? 'GET' : 'POST'),
        agent: false,
        headers: {
          authorization: `Bearer ${options.key ?? PERSONAL_API_KEY}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        const read = (): void => {
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
          );
          res.on('error', reject);
          res.resume(); // a 'data' listener alone does not resume a stream paused by hand
        };
        if (options.readAfterMs) {
          res.pause();
          setTimeout(read, options.readAfterMs);
        } else read();
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A CSV field as written: its text, and whether it was quoted (an unquoted empty field is NULL). */
interface CsvCell {
  readonly text: string;
  readonly quoted: boolean;
}

/**
 * The header and rows of a CSV body, each field with whether it was quoted. Without `quoting` the fields
 * are their text alone: telling quoted fields apart costs csv-parse several times its parse.
 */
export function readCsv(body: Buffer): { header: string[]; rows: CsvCell[][] };
export function readCsv(body: Buffer, quoting: false): { header: string[]; rows: string[][] };
export function readCsv(
  body: Buffer,
  quoting = true,
): { header: string[]; rows: CsvCell[][] } | { header: string[]; rows: string[][] } {
  const text = body.toString('utf8');
  if (!quoting) {
    const records: string[][] = parse(text, { record_delimiter: '\r\n' });
    const [header, ...rows] = records;
    return { header: header ?? [], rows };
  }
  const records = parse(text, {
    record_delimiter: '\r\n',
    cast: (field: string, context: { quoting: boolean }) => ({ text: field, quoted: context.quoting }),
  }) as unknown as CsvCell[][];
  const [header, ...rows] = records;
  return { header: (header ?? []).map((c) => c.text), rows };
}

/** A JSON answer's value as CSV writes it: NULL as nothing, nested values as JSON, the rest as text. */
export function csvCellOf(value: unknown): CsvCell {
  if (value === null) return { text: '', quoted: false };
  if (typeof value === 'string') return { text: value, quoted: value === '' || /[",\r\n]/.test(value) };
  const text = JSON.stringify(value);
  return { text, quoted: /[",\r\n]/.test(text) };
}

/** The objects of an NDJSON body, one a line, each line ending in LF. */
export function readNdjson(body: Buffer): Record<string, unknown>[] {
  const text = body.toString('utf8');
  if (text === '') return [];
  if (!text.endsWith('\n')) throw new Error('an NDJSON body ends with a line feed');
  return text
    .slice(0, -1)
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

export function readArrow(body: Buffer): Table {
  return tableFromIPC(new Uint8Array(body.buffer, body.byteOffset, body.byteLength));
}

export function readParquetTable(body: Buffer): Table {
  return tableFromIPC(readParquet(new Uint8Array(body)).intoIPCStream());
}

/** A table's rows as the JSON answer has them, reading each column by its ClickHouse type. */
export function jsonRowsOf(table: Table, types: readonly string[]): unknown[][] {
  const columns = table.schema.fields.map((_, i) => columnJson(table.getChildAt(i)!, types[i]!));
  return Array.from({ length: table.numRows }, (_, r) => columns.map((c) => c[r]));
}

function columnJson(vector: Vector, type: string): unknown[] {
  const t = base(type);
  const arrowType = vector.type as DataType;
  if (DataType.isTimestamp(arrowType)) {
    // The stored integers themselves: a time read as milliseconds in a double would lose microseconds.
    const out: unknown[] = [];
    const perSecond = {
      [TimeUnit.SECOND]: 1n,
      [TimeUnit.MILLISECOND]: 1_000n,
      [TimeUnit.MICROSECOND]: 1_000_000n,
      [TimeUnit.NANOSECOND]: 1_000_000_000n,
    }[arrowType.unit];
    const digits = Number(/^DateTime64\((\d+)/.exec(t)?.[1] ?? 0);
    for (const data of vector.data) {
      const values = data.values as BigInt64Array;
      for (let i = 0; i < data.length; i++) {
        out.push(data.getValid(i) ? timeText(values[data.offset + i]!, perSecond, digits) : null);
      }
    }
    return out;
  }
  return Array.from({ length: vector.length }, (_, i) => valueJson(vector.get(i), t));
}

function valueJson(v: unknown, type: string): unknown {
  if (v === null || v === undefined) return null;
  const t = base(type);
  if (t === 'Date' || t === 'Date32') return new Date(v as number).toISOString().slice(0, 10);
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : String(v);
  if (t === 'Float32') return shortestFloat32(v as number);
  const inner = /^Array\((.*)\)$/.exec(t)?.[1];
  if (inner !== undefined) return [...(v as Iterable<unknown>)].map((x) => valueJson(x, inner));
  if (/^(Tuple|Map|JSON|Object)/.test(t)) return JSON.parse(v as string);
  return v;
}

function timeText(units: bigint, perSecond: bigint, digits: number): string {
  const seconds = units / perSecond - (units % perSecond < 0n ? 1n : 0n);
  const fraction = units - seconds * perSecond;
  const iso = new Date(Number(seconds) * 1000).toISOString();
  const text = `${iso.slice(0, 10)} ${iso.slice(11, 19)}`;
  if (digits === 0) return text;
  const f = String((fraction * 1_000_000_000n) / perSecond).padStart(9, '0');
  return `${text}.${f.slice(0, digits)}`;
}

function base(type: string): string {
  let t = type.trim();
  for (
    let m = /^(?:Nullable|LowCardinality)\((.*)\)$/.exec(t);
    m;
    m = /^(?:Nullable|LowCardinality)\((.*)\)$/.exec(t)
  )
    t = m[1]!.trim();
  return t;
}

function shortestFloat32(v: number): number {
  const f = Math.fround(v);
  for (let p = 1; p < 10; p++) {
    const n = Number(f.toPrecision(p));
    if (Math.fround(n) === f) return n;
  }
  return f;
}
