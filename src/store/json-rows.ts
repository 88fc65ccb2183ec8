import type { Row, Values } from '../core/ports.ts';
import { wellFormedJson } from '../core/well-formed.ts';

/**
 * Rows as JSON bytes, the form both store adapters insert: `JsonRowEncoder` writes a JSON array of some rows,
 * and the helpers join several such arrays into one block (JSONEachRow reads one array of objects;
 * JSONCompactEachRow reads rows of values one after another, separated by commas) and split a block back
 * into rows when the engine refuses some of them.
 */

const OPEN_BRACKET = 0x5b;
const SLAB_BYTES = 4 * 1024 * 1024;
const OPEN = Buffer.from('[');
const CLOSE = Buffer.from(']');
const COMMA = Buffer.from(',');

/** Writes rows as one JSON array into a shared slab, as Node's pool does for small buffers (see `encode`). */
export class JsonRowEncoder {
  #slab = Buffer.alloc(0);
  #slabUsed = 0;

  /**
   * One JSON array of the rows: less CPU than a JSON text per row, and ClickHouse's JSONEachRow reads an
   * array of objects as rows (for rows of values, the insert hands JSONCompactEachRow the array's members).
   */
  encode(rows: readonly Row[] | readonly Values[]): Buffer {
    // A string Weir made by cutting one from a client (a warning's excerpt) can end in half a pair, which the
    // engine refuses: no row leaves for the store with a lone surrogate (capture's edge takes the clients').
    const text = wellFormedJson(JSON.stringify(rows));
    // A JSON text of a few rows is past Node's own 4 KB pool, where `Buffer.from` would make each its own
    // ArrayBuffer (slower than writing into a slab, and an external allocation each, which drives GC).
    // Encodings are short-lived (a commit copies them, or sends them), so a slab is let go soon after it fills.
    const most = text.length * 3;
    if (most > SLAB_BYTES / 4) return Buffer.from(text);
    if (this.#slabUsed + most > this.#slab.length) {
      this.#slab = Buffer.allocUnsafe(SLAB_BYTES);
      this.#slabUsed = 0;
    }
    const start = this.#slabUsed;
    this.#slabUsed += this.#slab.write(text, start);
    return this.#slab.subarray(start, this.#slabUsed);
  }
}

/**
 * One JSON array of the rows of several frames, each an array (or, from logs of earlier versions, one object
 * a line): JSONEachRow input reads one array, not several one after another. Always a buffer of its own,
 * unless given one whole buffer that is an array already: a view into the encoder's slab, kept as a frame
 * until applied, would keep the whole slab.
 */
export function jsonArrayOf(frames: readonly Buffer[]): Buffer {
  const only = frames.length === 1 ? frames[0]! : undefined;
  if (only && only[0] === OPEN_BRACKET && only.byteLength === only.buffer.byteLength) return only;
  return Buffer.concat(jsonArrayParts(frames));
}

/**
 * `jsonArrayOf` as the pieces to write one after another, without copying them into one buffer: a block of a
 * few MB goes to the engine this way (a copy of it on the main thread took milliseconds).
 */
export function jsonArrayParts(frames: readonly Buffer[]): Buffer[] {
  return [OPEN, ...jsonMemberParts(frames), CLOSE];
}

/**
 * `jsonArrayParts` without the enclosing brackets: the rows of the frames, one after another, separated by
 * commas. JSONCompactEachRow, which rows given as values go to, reads rows so and reads no enclosing array.
 */
export function jsonMemberParts(frames: readonly Buffer[]): Buffer[] {
  const parts: Buffer[] = [];
  for (const f of frames) {
    const members = f[0] === OPEN_BRACKET ? f.subarray(1, f.length - 1) : linesAsMembers(f);
    if (members.length === 0) continue;
    if (parts.length > 0) parts.push(COMMA);
    parts.push(members);
  }
  return parts;
}

/** JSON lines as array members: a JSON text holds no raw newline, so every newline separates two rows. */
function linesAsMembers(lines: Buffer): Buffer {
  let end = lines.length;
  while (end > 0 && (lines[end - 1] === 0x0a || lines[end - 1] === 0x0d)) end--;
  const out = Buffer.from(lines.subarray(0, end));
  for (let i = out.indexOf(0x0a); i !== -1; i = out.indexOf(0x0a, i + 1)) out[i] = 0x2c;
  return out;
}

/**
 * The rows of a block one JSON text a line (each ending in a newline), to look for the ones at fault. Rows of
 * values (`values`) come as the members of arrays, separated by commas.
 */
export function rowLines(data: Buffer, values: boolean): Buffer[] {
  if (!values && data[0] !== OPEN_BRACKET) return splitLines(data);
  const text = data.toString('utf8');
  const rows = JSON.parse(values ? `[${text}]` : text) as unknown[];
  return rows.map((r) => Buffer.from(`${JSON.stringify(r)}\n`));
}

/** A row of values (one JSON text) as an object of its columns. */
export function valuesAsRow(columns: readonly string[], line: Buffer): Row {
  const values = JSON.parse(line.toString('utf8')) as unknown[];
  return Object.fromEntries(columns.map((c, i) => [c, values[i]]));
}

function splitLines(data: Buffer): Buffer[] {
  const lines: Buffer[] = [];
  let start = 0;
  for (;;) {
    const nl = data.indexOf(10, start);
    if (nl === -1) break;
    lines.push(data.subarray(start, nl + 1));
    start = nl + 1;
  }
  if (start < data.length) lines.push(data.subarray(start));
  return lines;
}
