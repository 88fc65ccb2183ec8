/**
 * A materialized run (SPEC §4), answered from the stored table as the ServingPlan says: keep the rows the
 * run's variables select, merge them again per group when a range spans buckets, order, apply the query's
 * own LIMIT and the page. Pure and synchronous, no I/O: what a query actor (worker thread) calls on the
 * Arrow table it holds.
 *
 * Stored columns are read by index (a query's column names may repeat), and only the columns a step needs:
 * the filter reads the variables' columns of every row, the answer's columns are read for the kept rows.
 * They are read from the arrays the table's columns were decoded into once (columns.ts), not from Arrow.
 */
import type { Table } from 'apache-arrow';
import { AppError } from '../../errors/app-error.ts';
import type { ParamValue } from '../clickhouse/variables.ts';
import type {
  InsightServing,
  ServedResult,
  ServingFilter,
  ServingOutput,
  ServingPlan,
  SqlServing,
} from './serving.ts';
import { arrowSize, columnReader, decodedTable, type ColumnReader } from './columns.ts';
import { bucketStart, compare, comparable, kindOf, toJson, variableAs } from './values.ts';

export interface ServingPage {
  readonly limit?: number;
  readonly offset?: number;
}

export function executeServing(
  table: Table,
  plan: ServingPlan,
  variables: Readonly<Record<string, ParamValue>>,
  page: ServingPage,
): ServedResult {
  const types = plan.stored.map((c, i) => {
    if (c.type === null) throw new Error('the serving plan is not described: its stored types are unknown');
    return c.type ?? String(i);
  });
  if (table.numCols !== plan.stored.length) {
    throw new Error(`the stored table has ${table.numCols} columns; its plan expects ${plan.stored.length}`);
  }
  const decoded = decodedTable(table, () => arrowSize(table)).columns;
  // A reader is cheap (closures over the decoded arrays) but made once a run per column all the same.
  const readers: ColumnReader[] = [];
  const column = (i: number): ColumnReader =>
    (readers[i] ??= columnReader(() => table.getChildAt(i)!, decoded[i] ?? null, types[i]!));
  return plan.kind === 'sql'
    ? executeSql(table, column, types, plan, variables, page)
    : executeInsight(table.numRows, column, types, plan, variables);
}

function executeSql(
  table: Table,
  column: (i: number) => ColumnReader,
  types: readonly string[],
  plan: SqlServing,
  variables: Readonly<Record<string, ParamValue>>,
  page: ServingPage,
): ServedResult {
  const tests = plan.filters.map((f) => filterTest(f, column(f.column), types[f.column]!, variables));
  const marker = plan.emptyMarker === null ? null : column(plan.emptyMarker);
  // An equality narrows the rows through an index of its column first; the other tests read only those.
  const first = plan.filters.find((f) => f.op === '=');
  const candidates = first ? candidateRows(first, column(first.column), types, variables, table) : null;
  let kept: number[] = [];
  let emptyRow = -1;
  const numRows = table.numRows;
  const total = candidates ? candidates.length : numRows;
  for (let n = 0; n < total; n++) {
    const row = candidates ? candidates[n]! : n;
    if (marker && Number(marker.raw(row)) === 1) {
      emptyRow = row;
      continue;
    }
    if (tests.every((test) => test(row))) kept.push(row);
  }
  if (marker && candidates && kept.length === 0) {
    for (let row = 0; row < numRows && emptyRow < 0; row++) if (Number(marker.raw(row)) === 1) emptyRow = row;
  }
  // A query with aggregates and no GROUP BY answers its row over no rows (count() 0, …) when none is kept.
  if (kept.length === 0 && emptyRow >= 0) kept = [emptyRow];

  const outputType = plan.outputs.map((o) => outputTypeOf(o, types));
  let rows =
    plan.mode === 'rows'
      ? kept.map((row) => plan.outputs.map((o) => column((o as { stored: number }).stored).json(row)))
      : reaggregate(kept, column, types, plan);
  if (plan.distinct) {
    const seen = new Set<string>();
    rows = rows.filter((r) => {
      const key = JSON.stringify(r.slice(0, plan.visible));
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
  }
  if (plan.order.length > 0) rows.sort((a, b) => orderRows(a, b, plan));
  const own = rows.slice(plan.offset, plan.limit === null ? undefined : plan.offset + plan.limit);
  const from = own.slice(page.offset ?? 0);
  const answer = page.limit === undefined ? from : from.slice(0, page.limit);
  return {
    columns: plan.outputs.slice(0, plan.visible).map((o) => o.name),
    types: outputType.slice(0, plan.visible),
    rows: answer.map((r) => (r.length === plan.visible ? r : r.slice(0, plan.visible))),
    hasMore: page.limit !== undefined && from.length > page.limit,
  };
}

/** The test of one variable's predicate on a row of the stored table. */
function filterTest(
  filter: ServingFilter,
  reader: ColumnReader,
  type: string,
  variables: Readonly<Record<string, ParamValue>>,
): (row: number) => boolean {
  if (!Object.hasOwn(variables, filter.variable)) {
    throw new AppError('missing_variable', {
      detail: `Required variable(s) '${filter.variable}' not provided`,
      attr: 'variables',
    });
  }
  const kind = kindOf(type);
  let value = variableAs(variables[filter.variable]!, kind);
  if (value === undefined) {
    throw new AppError('invalid_variable', {
      detail: `Variable '${filter.variable}': cannot be compared with its column, of type ${type}`,
      attr: 'variables',
    });
  }
  // A comparison with NULL is never true.
  if (value === null) return () => false;
  if (filter.bucket !== null && kind === 'time') value = bucketStart(value as number, filter.bucket);
  const wanted = value;
  const op = filter.op;
  const holds = (c: number): boolean =>
    op === '=' ? c === 0 : op === '>=' ? c >= 0 : op === '>' ? c > 0 : op === '<' ? c < 0 : c <= 0;
  const strings = reader.strings;
  if (strings) {
    // Each distinct string is compared once a run; a row's test is then a look-up of its code.
    const pass = new Uint8Array(strings.dict.length);
    for (let c = 1; c < pass.length; c++) pass[c] = holds(compare(strings.dict[c], wanted)) ? 1 : 0;
    const codes = strings.codes;
    return (row) => pass[codes[row]!] === 1;
  }
  return (row) => {
    const stored = reader.cmp(row);
    return stored !== null && holds(compare(stored, wanted));
  };
}

/**
 * Rows of a column read from Arrow by their value, made the first time a run filters the column with `=` and
 * kept as long as the table (the actor's): a run of one value then reads its rows, not the whole table.
 * Decoded strings have their own index (columns.ts); decoded numbers are scanned (a typed array is read at
 * a nanosecond or so a row, and their index would be memory the pool does not count).
 */
const indexes = new WeakMap<Table, Map<number, Map<unknown, number[]>>>();

function candidateRows(
  filter: ServingFilter,
  reader: ColumnReader,
  types: readonly string[],
  variables: Readonly<Record<string, ParamValue>>,
  table: Table,
): ArrayLike<number> | null {
  const kind = kindOf(types[filter.column]!);
  const wanted = variableAs(variables[filter.variable] ?? null, kind);
  const strings = reader.strings;
  if (strings) {
    if (!strings.rows || !strings.starts) return null;
    const code = typeof wanted === 'string' ? strings.lookup.get(wanted) : undefined;
    return code === undefined ? [] : strings.rows.subarray(strings.starts[code], strings.starts[code + 1]);
  }
  if (reader.decoded) return null;
  let byColumn = indexes.get(table);
  if (!byColumn) indexes.set(table, (byColumn = new Map<number, Map<unknown, number[]>>()));
  let index = byColumn.get(filter.column);
  if (!index) {
    index = new Map();
    for (let row = 0; row < table.numRows; row++) {
      const key = indexKey(reader.cmp(row));
      if (key === null) continue;
      const rows = index.get(key);
      if (rows) rows.push(row);
      else index.set(key, [row]);
    }
    byColumn.set(filter.column, index);
  }
  return wanted === null || wanted === undefined ? [] : (index.get(indexKey(wanted)) ?? []);
}

/** One key for values that compare equal: a bigint as the number it is, when exact. */
function indexKey(v: unknown): unknown {
  if (typeof v !== 'bigint') return v;
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : `bigint:${v}`;
}

function outputTypeOf(o: ServingOutput, types: readonly string[]): string {
  if (o.kind !== 'avg') return types[o.stored]!;
  return /^Nullable\(/.test(types[o.sum]!) ? 'Nullable(Float64)' : 'Float64';
}

interface Merge {
  readonly key: unknown[];
  readonly values: unknown[];
  readonly counts: unknown[];
}

/** The kept rows grouped by their keys, each group's partial aggregates merged; JSON values. */
function reaggregate(
  kept: readonly number[],
  column: (i: number) => ColumnReader,
  types: readonly string[],
  plan: SqlServing,
): unknown[][] {
  const keyReaders = plan.keys.map((k) => column((plan.outputs[k] as { stored: number }).stored));
  // Groups in the order they are first met (the answer's order without ORDER BY). One key that is not an
  // object is its own Map key (equal where its JSON is equal: JSON.stringify only costs); others go by JSON.
  const groups: Merge[] = [];
  const byKey = new Map<unknown, Merge>();
  const byJson = new Map<string, Merge>();
  for (const row of kept) {
    const key = keyReaders.map((r) => r.json(row));
    const single = key.length === 1 && (key[0] === null || typeof key[0] !== 'object');
    const id = single ? key[0] : JSON.stringify(key);
    let group = single ? byKey.get(id) : byJson.get(id as string);
    if (!group) {
      group = { key, values: plan.outputs.map(() => null), counts: plan.outputs.map(() => null) };
      groups.push(group);
      if (single) byKey.set(id, group);
      else byJson.set(id as string, group);
    }
    for (let i = 0; i < plan.outputs.length; i++) {
      const o = plan.outputs[i]!;
      if (o.kind === 'value') continue;
      if (o.kind === 'avg') {
        const sum = column(o.sum);
        const count = column(o.count);
        group.values[i] = add(group.values[i], sum.raw(row), sum.bigints);
        group.counts[i] = add(group.counts[i], count.raw(row), count.bigints);
        continue;
      }
      const reader = column(o.stored);
      const v: unknown = reader.raw(row);
      if (v === null || v === undefined) continue;
      const current = group.values[i];
      if (o.kind === 'sum') group.values[i] = add(current, v, reader.bigints);
      else if (current === null) group.values[i] = v;
      else {
        const type = types[o.stored]!;
        const c = compare(reader.cmp(row), comparable(current, kindOf(type), type));
        if (o.kind === 'min' ? c < 0 : c > 0) group.values[i] = v;
      }
    }
  }
  return groups.map((g) =>
    plan.outputs.map((o, i) => {
      if (o.kind === 'value') return g.key[plan.keys.indexOf(i)];
      if (o.kind === 'avg') {
        if (g.values[i] === null || g.counts[i] === null) return null;
        const q = Number(g.values[i]) / Number(g.counts[i]);
        return Number.isFinite(q) ? q : null;
      }
      return toJson(g.values[i], types[o.stored]!);
    }),
  );
}

/**
 * A sum that stays exact for 64-bit integers and skips NULLs: bigints (read from Arrow) are summed as
 * bigints; `bigints` says numbers were decoded from them (each exact), summed as numbers while the sum is
 * exact and as bigints once it is not, as the bigints themselves would have been.
 */
function add(total: unknown, v: unknown, bigints: boolean): unknown {
  if (v === null || v === undefined) return total;
  if (total === null) return v;
  if (typeof total === 'bigint' || typeof v === 'bigint')
    return BigInt(total as bigint) + BigInt(v as bigint);
  const sum = (total as number) + (v as number);
  return bigints && !Number.isSafeInteger(sum) ? BigInt(total as number) + BigInt(v as number) : sum;
}

/** ClickHouse's order: by each item in turn; NULLs last unless NULLS FIRST. */
function orderRows(a: readonly unknown[], b: readonly unknown[], plan: SqlServing): number {
  for (const item of plan.order) {
    const x = a[item.output];
    const y = b[item.output];
    if (x === null || y === null) {
      if (x === y) continue;
      const nullFirst = item.nulls === 'first';
      return (x === null) === nullFirst ? -1 : 1;
    }
    const c = compare(x, y);
    if (c !== 0) return item.descending ? -c : c;
  }
  return 0;
}

function executeInsight(
  numRows: number,
  column: (i: number) => ColumnReader,
  types: readonly string[],
  plan: InsightServing,
  variables: Readonly<Record<string, ParamValue>>,
): ServedResult {
  const selecting = plan.breakdown !== null && Object.hasOwn(variables, plan.breakdown.variable);
  const selected = selecting ? variables[plan.breakdown.variable] : undefined;
  const wanted = selected === null || selected === '' || selected === undefined ? null : String(selected);
  const part = plan.part === null ? null : column(plan.part);
  const bd = plan.breakdown === null ? null : column(plan.breakdown.column);
  const rows: unknown[][] = [];
  for (let row = 0; row < numRows; row++) {
    if (part && Number(part.raw(row)) !== (selecting ? 1 : 0)) continue;
    if (selecting && bd) {
      const value = bd.json(row);
      if (wanted === null ? value !== null : value !== wanted) continue;
    }
    rows.push(plan.columns.map((i) => column(i).json(row)));
  }
  const at = plan.breakdownColumn === null ? -1 : plan.columns.indexOf(plan.breakdownColumn);
  const isOther = (r: unknown[]): boolean =>
    r[at] === 'Other' || (Array.isArray(r[at]) && (r[at] as unknown[]).includes('Other'));
  const hasMore = at >= 0 && rows.some(isOther);
  return {
    columns: plan.columns.map((i) => plan.stored[i]!.name),
    types: plan.columns.map((i) => types[i]!),
    rows: plan.hideOther && at >= 0 ? rows.filter((r) => !isOther(r)) : rows,
    hasMore,
  };
}
