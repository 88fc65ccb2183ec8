/**
 * The HogQL compatibility corpus (test/fixtures/dialect/compat/*.sql, format in its README.md): real
 * queries from PostHog's public material, each with its source and, mostly, the answer worked out by hand
 * on the dataset of compat-dataset.ts. Also how an answer is compared with the expected one. The parity
 * corpus (test/fixtures/dialect/parity) has the same format and is read by the same loader.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { TestWeir } from './weir.ts';
import { queryApi } from './query-api.ts';

/** The corpus of issue 26 (PostHog's docs, tutorials, tests, a community guide). */
export const COMPAT_DIR = new URL('../fixtures/dialect/compat/', import.meta.url);
/** The corpus of issue 42: more of PostHog's tests and the HogQL its own code runs, checked by its parser. */
export const PARITY_DIR = new URL('../fixtures/dialect/parity/', import.meta.url);

export interface CompatQuery {
  readonly file: string;
  /** Line of the `-- name:` header, for messages. */
  readonly line: number;
  readonly name: string;
  readonly source: string;
  readonly notes: readonly string[];
  readonly text: string;
  /** Rows as arrays in column order; undefined when the query only has to answer. */
  readonly expect?: readonly unknown[][];
  /** Whether the rows must come in the expected order (else compared as a multiset). */
  readonly ordered: boolean;
  /** PostHog's own run refuses the query (its parser accepts it): then a refusal (4xx) is the right answer. */
  readonly refused?: string;
}

/** Every query of the corpus in `dir` (a directory URL ending in '/'; the compat corpus by default). */
export function loadCompatCorpus(dir: URL = COMPAT_DIR): CompatQuery[] {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort();
  const out = files.flatMap((file) => parseFile(file, readFileSync(new URL(file, dir), 'utf8')));
  const seen = new Set<string>();
  for (const q of out) {
    if (seen.has(q.name)) throw new Error(`${q.file}:${q.line}: name "${q.name}" is used twice`);
    seen.add(q.name);
  }
  return out;
}

/** The parity corpus (test/fixtures/dialect/parity). */
export function loadParityCorpus(): CompatQuery[] {
  return loadCompatCorpus(PARITY_DIR);
}

function parseFile(file: string, content: string): CompatQuery[] {
  const out: CompatQuery[] = [];
  let current: {
    line: number;
    name: string;
    source?: string;
    notes: string[];
    body: string[];
    expect?: unknown[][];
    ordered: boolean;
    refused?: string;
  } | null = null;
  const flush = (): void => {
    if (!current) return;
    const where = `${file}:${current.line}`;
    if (!current.source) throw new Error(`${where}: "${current.name}" has no -- source: line`);
    const text = current.body.join('\n').trim();
    if (!text) throw new Error(`${where}: "${current.name}" has no query`);
    out.push({
      file,
      line: current.line,
      name: current.name,
      source: current.source,
      notes: current.notes,
      text,
      ordered: current.ordered,
      ...(current.expect ? { expect: current.expect } : {}),
      ...(current.refused ? { refused: current.refused } : {}),
    });
  };
  content.split('\n').forEach((raw, i) => {
    const line = raw.trimEnd();
    const name = /^-- name: (.+)$/.exec(line);
    if (name) {
      flush();
      current = { line: i + 1, name: name[1]!.trim(), notes: [], body: [], ordered: false };
      return;
    }
    if (!current) return; // the file's opening comment
    const source = /^-- source: (.+)$/.exec(line);
    const note = /^-- note: (.+)$/.exec(line);
    const expect = /^-- expect: (.+)$/.exec(line);
    const refused = /^-- refused: (.+)$/.exec(line);
    if (source) current.source = source[1]!.trim();
    else if (refused) current.refused = refused[1]!.trim();
    else if (note) current.notes.push(note[1]!.trim());
    else if (line === '-- ordered') current.ordered = true;
    else if (expect) {
      const parsed: unknown = JSON.parse(expect[1]!);
      if (!Array.isArray(parsed) || !parsed.every(Array.isArray))
        throw new Error(`${file}:${i + 1}: expect must be a JSON array of rows (arrays)`);
      current.expect = parsed as unknown[][];
    } else current.body.push(raw);
  });
  flush();
  return out;
}

const DATE_TIME = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.(\d+))?(?:Z|[+-]00:?00)?$/;
const NUMERIC = /^-?\d+(?:\.\d+)?(?:e[+-]?\d+)?$/i;

/**
 * One value in the form answers are compared in: booleans as 1/0 (HogQL's comparisons are UInt8 in
 * ClickHouse, True in PostHog's Python), numeric strings as numbers (64-bit integers may come as strings),
 * date-times as `YYYY-MM-DD hh:mm:ss` with any fraction's trailing zeros dropped.
 */
export function normalize(v: unknown): unknown {
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (Array.isArray(v)) return v.map(normalize);
  if (typeof v === 'string') {
    const dt = DATE_TIME.exec(v);
    if (dt) {
      const frac = (dt[3] ?? '').replace(/0+$/, '');
      return `${dt[1]} ${dt[2]}${frac ? `.${frac}` : ''}`;
    }
    if (NUMERIC.test(v)) return Number(v);
  }
  return v;
}

function same(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' && typeof b === 'number') {
    if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) && Number.isNaN(b);
    return a === b || Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
  }
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => same(x, b[i]));
  return a === b;
}

/** A total order on normalized rows, to compare multisets of rows whose floats may differ slightly. */
function sortKey(row: unknown): string {
  return JSON.stringify(row, (_k, v: unknown) => (typeof v === 'number' ? Number(v.toPrecision(9)) : v));
}

/** Whether `actual` rows answer `expected`: in order when `ordered`, else as a multiset. */
export function sameAnswer(
  actual: readonly unknown[][],
  expected: readonly unknown[][],
  ordered: boolean,
): boolean {
  const a = actual.map<unknown>(normalize);
  const e = expected.map<unknown>(normalize);
  if (a.length !== e.length) return false;
  if (!ordered) {
    const byKey = (x: unknown, y: unknown): number =>
      sortKey(x) < sortKey(y) ? -1 : sortKey(x) > sortKey(y) ? 1 : 0;
    a.sort(byKey);
    e.sort(byKey);
  }
  return a.every((row, i) => same(row, e[i]));
}

export type CompatOutcome =
  | { readonly kind: 'right'; readonly ms: number }
  /** Answered 200 with no expected answer to check. */
  | { readonly kind: 'answered'; readonly ms: number }
  | { readonly kind: 'wrong'; readonly ms: number; readonly results: unknown[][] }
  | { readonly kind: 'refused'; readonly ms: number; readonly status: number; readonly message: string };

/** Runs one corpus query through the query API and says how it went. */
export async function runCompatQuery(w: TestWeir, q: CompatQuery): Promise<CompatOutcome> {
  const started = performance.now();
  const res = await queryApi(w, q.text);
  const ms = performance.now() - started;
  if (res.status !== 200) {
    if (q.refused && res.status >= 400 && res.status < 500) return { kind: 'right', ms };
    const body = res.json as { detail?: unknown } | undefined;
    const message = typeof body?.detail === 'string' ? body.detail : res.text.slice(0, 500);
    return { kind: 'refused', ms, status: res.status, message };
  }
  const results = (res.json as { results: unknown[][] }).results;
  if (!q.expect) return { kind: 'answered', ms };
  return sameAnswer(results, q.expect, q.ordered) ? { kind: 'right', ms } : { kind: 'wrong', ms, results };
}

/**
 * Every query of a corpus through the query API, a few at a time (so a file stays fast on a busy machine),
 * the outcomes in the corpus's order.
 */
export async function runCompatCorpus(w: TestWeir, corpus: readonly CompatQuery[]): Promise<CompatOutcome[]> {
  const outcomes = new Array<CompatOutcome>(corpus.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < corpus.length) {
        const i = next++;
        outcomes[i] = await runCompatQuery(w, corpus[i]!);
      }
    }),
  );
  return outcomes;
}

/**
 * A refusal's message without what only places it (line and column, the list of columns a table has, the
 * failing expression ClickHouse echoes), so the same reason groups together; the name refused is kept.
 */
export function refusalReason(message: string): string {
  return message
    .replace(/: while executing[\s\S]*$/, '')
    .replace(/\s*\(line \d+, column \d+\)/g, '')
    .replace(/;\s*(?:the|its) columns (?:here )?are[^(]*/g, '')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 200);
}
