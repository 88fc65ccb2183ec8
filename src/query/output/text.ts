/**
 * CSV (RFC 4180) and NDJSON encodings of a result, a piece of about `PIECE_CHARS` at a time, so that a large
 * result is never one string: the writer takes the next piece when the socket has room for it.
 */
import { distinctNames, type BodyPieces, type TabularResult } from './formats.ts';

/** Characters in a piece: large enough that a write is worth its call, small enough to stay short-lived. */
const PIECE_CHARS = 64 * 1024;

/**
 * CSV: a header line of the column names, then one line a row, lines ending in CRLF. A field holding a comma,
 * a quote, CR or LF is quoted (quotes doubled). NULL is an empty field and the empty string `""`, so the two
 * stay apart; nested values (arrays, tuples, maps) are their JSON text; numbers and booleans as JSON writes them.
 */
export function csvPieces(result: TabularResult): BodyPieces {
  const header = distinctNames(result.columns).map(csvText).join(',') + '\r\n';
  return linePieces(result.rows.length, header, (row) => {
    const values = result.rows[row]!;
    let line = '';
    for (let i = 0; i < values.length; i++) {
      if (i > 0) line += ',';
      line += csvField(values[i]);
    }
    return line + '\r\n';
  });
}

/**
 * NDJSON: one JSON object a row, keyed by column name in column order, each line ending in LF. Values are
 * those of the JSON answer.
 */
export function ndjsonPieces(result: TabularResult): BodyPieces {
  // Each key written out once: `{"a":` and `,"b":`.
  const keys = distinctNames(result.columns).map(
    (name, i) => `${i === 0 ? '{' : ','}${JSON.stringify(name)}:`,
  );
  return linePieces(result.rows.length, '', (row) => {
    const values = result.rows[row]!;
    if (keys.length === 0) return '{}\n';
    let line = '';
    for (let i = 0; i < keys.length; i++) line += keys[i]! + (JSON.stringify(values[i]) ?? 'null');
    return line + '}\n';
  });
}

/** Pieces of `head` and each row's line, joined while under `PIECE_CHARS`. */
function linePieces(rows: number, head: string, line: (row: number) => string): BodyPieces {
  let next = 0;
  let headGiven = head === '';
  return () => {
    let piece = headGiven ? '' : head;
    headGiven = true;
    while (next < rows && piece.length < PIECE_CHARS) piece += line(next++);
    return piece === '' ? undefined : piece;
  };
}

function csvField(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value === '' ? '""' : csvText(value);
  if (typeof value === 'number' || typeof value === 'boolean') return JSON.stringify(value) ?? '';
  return csvText(JSON.stringify(value) ?? '');
}

const NEEDS_QUOTES = /[",\r\n]/;

function csvText(text: string): string {
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}
