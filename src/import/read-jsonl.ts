import type { Readable } from 'node:stream';
import type { SourceRow, StartAt } from './source-row.ts';

const NEWLINE = 0x0a;

/**
 * The rows of a JSON-lines (NDJSON) stream, one JSON value a line; blank lines are skipped. Each row carries
 * the byte offset just past its line, which is where a resume seeks in an uncompressed file. A line that is
 * not JSON is given as unreadable (with its text, cut to 1000 characters, for the rejects file), never
 * dropped. `start.offset` says the stream begins at that byte (a seek) and that its first line is row
 * `start.row`; without it the rows before `start.row` are read and skipped. The rows of one chunk of the
 * stream come together: a step of an async generator per row cost the importer more than the rows' parsing.
 */
export async function* readJsonLines(
  file: number,
  stream: Readable,
  start: StartAt,
): AsyncGenerator<SourceRow[]> {
  let row = start.offset === undefined ? 0 : start.row;
  let offset = start.offset ?? 0;
  let rest: Buffer | undefined;
  const line = (bytes: Buffer, newline = true): SourceRow | undefined => {
    const begin = offset;
    offset += bytes.length + (newline ? 1 : 0);
    let end = bytes.length;
    if (end > 0 && bytes[end - 1] === 0x0d) end--;
    let text = bytes.toString('utf8', 0, end);
    if (row === 0 && text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    if (text.trim() === '') return undefined;
    const pos = { file, row, start: begin, end: offset };
    row++;
    if (pos.row < start.row) return undefined;
    try {
      return { kind: 'value', pos, value: JSON.parse(text), text };
    } catch (err) {
      return { kind: 'unreadable', pos, reason: (err as Error).message, raw: text.slice(0, 1000) };
    }
  };
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    const buf = rest === undefined ? chunk : Buffer.concat([rest, chunk]);
    let from = 0;
    const rows: SourceRow[] = [];
    for (let nl = buf.indexOf(NEWLINE, from); nl !== -1; nl = buf.indexOf(NEWLINE, from)) {
      const r = line(buf.subarray(from, nl));
      from = nl + 1;
      if (r !== undefined) rows.push(r);
    }
    rest = from < buf.length ? Buffer.from(buf.subarray(from)) : undefined;
    if (rows.length > 0) yield rows;
  }
  if (rest !== undefined) {
    const r = line(rest, false);
    if (r !== undefined) yield [r];
  }
}
