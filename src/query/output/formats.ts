/**
 * The encodings a run or a query answers in (SPEC §4, a run's `format`): JSON, the default, carries the
 * rows and the metadata fields; the others carry the rows alone, made from the same table.
 */

export const OUTPUT_FORMATS = ['json', 'csv', 'ndjson', 'parquet', 'arrow'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export const CONTENT_TYPES: Readonly<Record<OutputFormat, string>> = {
  json: 'application/json',
  csv: 'text/csv; charset=utf-8',
  ndjson: 'application/x-ndjson',
  parquet: 'application/vnd.apache.parquet',
  arrow: 'application/vnd.apache.arrow.stream',
};

/** The formats that carry the rows alone, without the JSON answer's fields beside them. */
export type RowsFormat = Exclude<OutputFormat, 'json'>;
export const ROWS_FORMATS: readonly RowsFormat[] = OUTPUT_FORMATS.filter(
  (f): f is RowsFormat => f !== 'json',
);

export function isOutputFormat(value: unknown): value is OutputFormat {
  return typeof value === 'string' && (OUTPUT_FORMATS as readonly string[]).includes(value);
}

/** A result as every run answers it: rows of JSON values in the order of `columns`, typed by `types`. */
export interface TabularResult {
  readonly columns: readonly string[];
  /** ClickHouse types of the columns. */
  readonly types: readonly string[];
  readonly rows: readonly (readonly unknown[])[];
}

/**
 * The column names the non-JSON formats use: NDJSON keys and Arrow fields must be told apart, so a name
 * seen before gets `_2`, `_3`, … (one not taken yet).
 */
export function distinctNames(columns: readonly string[]): string[] {
  const taken = new Set<string>();
  const out: string[] = [];
  for (const name of columns) {
    let unique = name;
    for (let n = 2; taken.has(unique); n++) unique = `${name}_${n}`;
    taken.add(unique);
    out.push(unique);
  }
  return out;
}

/** A body made a piece at a time: each call gives the next piece, undefined once it is all given. */
export type BodyPieces = () => string | Uint8Array | undefined;
