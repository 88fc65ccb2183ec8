/**
 * Trends formulas (`trendsFilter.formulas`, `formulaNodes`, the older `formula`): arithmetic over the series,
 * which are named A, B, C, … in order (`A+2*B`, `(A-B)/A`). A formula's answer replaces the series' rows:
 * one list of rows per formula, each interval's value the formula of the series' values for the same
 * interval and breakdown value (a value a series does not have counts 0 there, as in PostHog).
 *
 * The formula text is parsed here into a dialect expression over the columns `A`, `B`, … of a pivot of the
 * series' rows: numbers, letters, `+ - * /`, unary minus and parentheses, nothing else. x / 0 is 0.
 */
import type { Expr, Query } from '../dialect/mod.ts';
import { alias, array, num, sql } from './template.ts';

export interface Formula {
  readonly text: string;
  /** The `series` label: the node's custom name, else `Formula (<text>)` (PostHog's). */
  readonly label: string;
}

const TOKEN = /\s*(?:(\d+(?:\.\d+)?)|([A-Za-z])|([-+*/()]))/y;
const MAX_DEPTH = 32;

/** The letter of series `i` (0 → A). */
export function letter(i: number): string {
  return String.fromCharCode(65 + i);
}

/**
 * The formula as an expression over the columns `A`, `B`, …, or the reason it is not one. `series`: how
 * many series there are (the letters it may name).
 */
export function parseFormula(text: string, series: number): Expr | string {
  const tokens: string[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < text.length) {
    const at = TOKEN.lastIndex;
    const m = TOKEN.exec(text);
    if (!m) {
      if (text.slice(at).trim() === '') break;
      return `'${text.slice(at).trim().slice(0, 16)}' is not part of a formula (numbers, series letters, + - * / and parentheses)`;
    }
    tokens.push(m[1] ?? m[2]?.toUpperCase() ?? m[3]!);
  }
  let pos = 0;
  const peek = (): string | undefined => tokens[pos];
  const fail = (why: string): never => {
    throw new FormulaError(why);
  };

  const primary = (depth: number): Expr => {
    if (depth > MAX_DEPTH) fail('it nests too deeply');
    const t = tokens[pos++];
    if (t === undefined) return fail('it ends too soon');
    if (t === '(') {
      const e = sum(depth + 1);
      if (tokens[pos++] !== ')') fail("a '(' is not closed");
      return e;
    }
    if (t === '-') return sql.expr`-(${primary(depth + 1)})`;
    if (/^\d/.test(t)) return num(Number(t));
    if (/^[A-Z]$/.test(t)) {
      const i = t.charCodeAt(0) - 65;
      if (i >= series) fail(`'${t}' names no series (there are ${series}: A to ${letter(series - 1)})`);
      return { kind: 'field', chain: [t] };
    }
    return fail(`'${t}' stands where a number, a series letter or '(' should`);
  };
  const product = (depth: number): Expr => {
    let e = primary(depth);
    for (let op = peek(); op === '*' || op === '/'; op = peek()) {
      pos++;
      const right = primary(depth);
      e = op === '*' ? sql.expr`${e} * ${right}` : sql.expr`ifNotFinite(${e} / ${right}, 0)`;
    }
    return e;
  };
  const sum = (depth: number): Expr => {
    let e = product(depth);
    for (let op = peek(); op === '+' || op === '-'; op = peek()) {
      pos++;
      const right = product(depth);
      e = op === '+' ? sql.expr`${e} + ${right}` : sql.expr`${e} - ${right}`;
    }
    return e;
  };

  try {
    if (tokens.length === 0) return 'it is empty';
    const e = sum(0);
    if (pos < tokens.length) return `'${tokens[pos]!}' is left over`;
    return e;
  } catch (err) {
    if (err instanceof FormulaError) return err.message;
    throw err;
  }
}

class FormulaError extends Error {}

/**
 * The formulas' rows from the series' rows (`si, [other, key,] [bucket,] val`): the same columns, `si` now
 * the formula's index, breakdown values re-ranked (`rank`) by the formula's total, highest first, then value.
 */
export function formulaRows(
  rows: Query,
  formulas: readonly Formula[],
  seriesCount: number,
  shape: { readonly breakdown: boolean; readonly time: boolean },
): Query {
  const keys: Expr[] = [
    ...(shape.breakdown ? [sql.expr`other`, sql.expr`key`] : []),
    ...(shape.time ? [sql.expr`bucket`] : []),
  ];
  const letters = Array.from({ length: seriesCount }, (_, i) =>
    alias(sql.expr`sumIf(val, si = ${num(i)})`, letter(i)),
  );
  const pivot = sql.query`SELECT ${keys}, ${letters} FROM ${rows} AS t GROUP BY ${keys}`;
  const exprs = formulas.map((f) => parseFormula(f.text, seriesCount) as Expr);
  const applied =
    exprs.length === 1
      ? sql.query`SELECT ${keys}, toUInt32(0) AS si, toFloat64(${exprs[0]!}) AS val FROM ${pivot} AS p`
      : sql.query`SELECT ${keys}, toUInt32(fi) AS si, toFloat64(fv) AS val FROM ${pivot} AS p ARRAY JOIN (${array(exprs)}) AS fv, (${array(formulas.map((_, i) => num(i)))}) AS fi`;
  if (!shape.breakdown) return applied;
  const time = shape.time ? [sql.expr`bucket`] : [];
  const totals = sql.query`SELECT si, other, key, ${time}, val, sum(val) OVER (PARTITION BY si, other, key) AS total FROM ${applied} AS f`;
  return sql.query`SELECT si, other, key, ${time}, val, dense_rank() OVER (PARTITION BY si ORDER BY total DESC, key ASC) AS rank FROM ${totals} AS f`;
}
