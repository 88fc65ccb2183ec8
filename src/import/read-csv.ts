import type { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import type { SourceRow, StartAt } from './source-row.ts';

/** Where a CSV column goes: an event field, one property, or nowhere. */
export type ColumnTarget =
  | { readonly to: 'event' | 'distinct_id' | 'timestamp' | 'uuid' | 'elements_chain' }
  | { readonly to: 'properties' | '$set' | '$set_once' }
  | { readonly to: 'property'; readonly name: string }
  | { readonly to: 'skip' };

const FIELDS = new Set(['event', 'distinct_id', 'timestamp', 'uuid', 'elements_chain']);
const OBJECT_FIELDS = new Set(['properties', '$set', '$set_once']);

/** Reads `--map column=field` (field: an event field, `properties`, `properties.NAME`, or `skip`). */
export function parseTarget(field: string): ColumnTarget {
  if (FIELDS.has(field)) return { to: field as 'event' };
  if (OBJECT_FIELDS.has(field)) return { to: field as 'properties' };
  if (field === 'skip') return { to: 'skip' };
  if (field.startsWith('properties.') && field.length > 'properties.'.length) {
    return { to: 'property', name: field.slice('properties.'.length) };
  }
  throw new Error(
    `--map: '${field}' is not a field: event, distinct_id, timestamp, uuid, properties (a JSON object), properties.NAME, $set, $set_once or skip`,
  );
}

/**
 * Where each column of a header goes. `--map` wins; then PostHog's export shape: its events table exported as
 * CSV writes the `*` column flattened, one column per field and per property (`*.uuid`, `*.event`,
 * `*.distinct_id`, `*.timestamp`, `*.properties.$browser`, …) beside display columns (`event`, `person`,
 * `timestamp`, `url`, …) that repeat them, which are skipped. Otherwise (a generic CSV) a column named as a
 * field is that field, `properties.NAME` that property, and any other column a property of its own name.
 */
export function columnTargets(
  header: readonly string[],
  map: ReadonlyMap<string, ColumnTarget>,
): ColumnTarget[] {
  const posthog = header.some((h) => h.startsWith('*.'));
  return header.map((h) => {
    const mapped = map.get(h);
    if (mapped !== undefined) return mapped;
    if (posthog && !h.startsWith('*.')) return { to: 'skip' };
    const name = posthog ? h.slice(2) : h;
    if (FIELDS.has(name) || OBJECT_FIELDS.has(name)) return parseTarget(name);
    if (name.startsWith('properties.')) return parseTarget(name);
    return posthog ? { to: 'skip' } : { to: 'property', name };
  });
}

/** One CSV record as the object `toImportEvent` reads; an empty cell is no value. */
export function recordToObject(
  cells: readonly string[],
  targets: readonly ColumnTarget[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  let props: Record<string, unknown> | undefined;
  for (let i = 0; i < targets.length; i++) {
    const t = targets[i]!;
    const cell = cells[i];
    if (cell === undefined || cell === '' || t.to === 'skip') continue;
    if (t.to === 'property') (props ??= {})[t.name] = cell;
    else if (t.to === '$set' || t.to === '$set_once') out[t.to] = parseObject(cell);
    else out[t.to] = cell;
  }
  if (props !== undefined) {
    const base = out['properties'];
    // A `properties` JSON column and single-property columns together: the single columns win.
    out['properties'] = typeof base === 'string' ? { ...(parseObject(base) ?? {}), ...props } : props;
  }
  return out;
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The rows of a CSV stream with a header line (RFC 4180: quoted cells may hold commas, quotes and newlines,
 * as a `properties` JSON cell does). A record the parser cannot read is given as unreadable, not dropped.
 */
export async function* readCsv(
  file: number,
  stream: Readable,
  start: StartAt,
  map: ReadonlyMap<string, ColumnTarget>,
): AsyncGenerator<SourceRow> {
  // Quotes inside an unquoted cell are taken as text (relax_quotes): a hand-written CSV has them, and a
  // record is then not lost. A record the parser still cannot read comes back through 'skip', with its line.
  const parser = parse({
    bom: true,
    relax_column_count: true,
    relax_quotes: true,
    skip_empty_lines: true,
    skip_records_with_error: true,
    info: true,
  });
  const skipped: { line: number; message: string; raw: string }[] = [];
  parser.on('skip', (err: Error & { lines?: number; raw?: string }) => {
    skipped.push({ line: err.lines ?? 0, message: err.message, raw: String(err.raw ?? '').slice(0, 1000) });
  });
  stream.on('error', (err: Error) => parser.destroy(err));
  stream.pipe(parser);
  let targets: ColumnTarget[] | undefined;
  let row = 0;
  // The parser reports a skipped record when it reads it, ahead of the records still to be consumed: each is
  // given in its place by its line number.
  function* skippedBefore(line: number): Generator<SourceRow> {
    while (skipped.length > 0 && skipped[0]!.line < line) {
      const s = skipped.shift()!;
      const pos = { file, row: row++ };
      if (pos.row >= start.row) yield { kind: 'unreadable', pos, reason: s.message, raw: s.raw };
    }
  }
  for await (const { record, info } of parser as AsyncIterable<{
    record: string[];
    info: { lines: number };
  }>) {
    if (targets === undefined) {
      targets = columnTargets(record, map);
      continue;
    }
    yield* skippedBefore(info.lines);
    const pos = { file, row: row++ };
    if (pos.row >= start.row) yield { kind: 'value', pos, value: recordToObject(record, targets) };
  }
  yield* skippedBefore(Infinity);
}
