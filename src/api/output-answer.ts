/**
 * A run's or a query's answer in the encoding its `format` asks for (SPEC §4): JSON is the routes' own; the
 * others are made here from the answer's table. CSV, NDJSON and Arrow are written a piece at a time as the
 * client takes them; Parquet is made whole first (its footer names every row group).
 */
import {
  CONTENT_TYPES,
  OUTPUT_FORMATS,
  isOutputFormat,
  type OutputFormat,
  type TabularResult,
} from '../query/output/formats.ts';
import { arrowStreamPieces } from '../query/output/arrow.ts';
import { parquetBytes } from '../query/output/parquet.ts';
import { csvPieces, ndjsonPieces } from '../query/output/text.ts';
import type { ApiResponse } from './api-route.ts';
import { invalid } from './json-input.ts';

export type { OutputFormat };

/** The `format` of a request (from a body or a query string): `json` when absent; 400 for another value. */
export function readFormat(value: unknown): OutputFormat {
  if (value === undefined || value === null) return 'json';
  if (!isOutputFormat(value)) {
    throw invalid(
      'format',
      `'format' is one of ${OUTPUT_FORMATS.join(', ')}; got ${JSON.stringify(value).slice(0, 64)}.`,
    );
  }
  return value;
}

/**
 * The 200 of a result in a format other than JSON, with `headers` beside its content type: at once for the
 * formats written a piece at a time, once made for Parquet.
 */
export function encodedAnswer(
  format: Exclude<OutputFormat, 'json'>,
  result: TabularResult,
  headers: Readonly<Record<string, string>>,
): ApiResponse | Promise<ApiResponse> {
  const contentType = CONTENT_TYPES[format];
  switch (format) {
    case 'csv':
      return { status: 200, headers, pieces: { next: csvPieces(result), contentType } };
    case 'ndjson':
      return { status: 200, headers, pieces: { next: ndjsonPieces(result), contentType } };
    case 'arrow':
      return { status: 200, headers, pieces: { next: arrowStreamPieces(result), contentType } };
    case 'parquet':
      return parquetBytes(result).then((bytes) => ({
        status: 200,
        headers,
        bytes: { data: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), contentType },
      }));
  }
}
