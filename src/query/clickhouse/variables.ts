/**
 * Binding `{variables.name}` placeholders to values. A value is never spliced into the SQL: each variable
 * becomes a ClickHouse query parameter (`{var_browser:String}`) whose type comes from the variable's declared
 * type when there is one (an endpoint's `variables`), else from the JSON value itself. The engine parses the
 * parameter's text as a value of that type, so a value can never become SQL.
 */
import type { InlineValue } from '../dialect/mod.ts';
import type { VariableType } from '../../core/ports.ts';
import { AppError } from '../../errors/app-error.ts';

/** The declared types of SPEC §4 (`{"browser": {"type": "string"}}`), kept with the catalog's endpoints. */
export { VARIABLE_TYPES, type VariableType } from '../../core/ports.ts';

/** What is sent for a parameter; the store's client writes it in ClickHouse's parameter text format. */
export type ParamValue = string | number | boolean | null | readonly ParamValue[];

export interface BoundVariable {
  readonly name: string;
  /** The ClickHouse parameter name. */
  readonly param: string;
  /** The ClickHouse type the parameter is read as. */
  readonly type: string;
  readonly value: ParamValue;
}

/**
 * Binds the variables a query uses to `values`. 400 `missing_variable` when a used variable has no value,
 * `unknown_variable` for a value no placeholder uses, `invalid_variable` for a value of the wrong shape.
 */
export function bindVariables(
  used: readonly string[],
  values: Readonly<Record<string, unknown>>,
  declared: Readonly<Record<string, VariableType>> = {},
): Map<string, BoundVariable> {
  let missing: string[] | undefined;
  for (const name of used) if (!Object.hasOwn(values, name)) (missing ??= []).push(name);
  if (missing) {
    throw new AppError('missing_variable', {
      detail: `Required variable(s) ${missing.map((n) => `'${n}'`).join(', ')} not provided`,
      attr: 'variables',
    });
  }
  const given = Object.keys(values);
  if (given.length !== used.length) {
    // Every used one is given (above): there are others.
    const unknown = given.filter((name) => !used.includes(name));
    throw new AppError('unknown_variable', {
      detail: `The query uses no variable ${unknown.map((n) => `'${n.slice(0, 64)}'`).join(', ')}; it uses ${
        used.length === 0 ? 'none' : used.map((n) => `'${n}'`).join(', ')
      }`,
      attr: 'variables',
    });
  }
  const bound = new Map<string, BoundVariable>();
  for (let i = 0; i < used.length; i++) {
    const name = used[i]!;
    const param = PARAM_SAFE.test(name) ? `var_${name}` : `var${i}`;
    const declaredType = Object.hasOwn(declared, name) ? declared[name] : undefined;
    const { type, value } = declaredType
      ? byDeclaredType(name, values[name], declaredType)
      : byValue(name, values[name]);
    bound.set(name, { name, param, type, value });
  }
  return bound;
}

const PARAM_SAFE = /^[A-Za-z0-9_]+$/;

/** The values as dialect literals for the `hogql` debug text. */
export function inlineValues(bound: ReadonlyMap<string, BoundVariable>): Record<string, InlineValue> {
  const out: Record<string, InlineValue> = {};
  for (const b of bound.values()) out[b.name] = b.value;
  return out;
}

function invalid(name: string, detail: string): AppError {
  return new AppError('invalid_variable', { detail: `Variable '${name}': ${detail}`, attr: 'variables' });
}

function numberType(n: number): string {
  return Number.isInteger(n) && Math.abs(n) < 2 ** 63 ? 'Int64' : 'Float64';
}

/**
 * A number past what a double holds (JSON's 1e400, read as Infinity) is refused here, as the caller's error:
 * chDB's client refuses to write it (the query API answered 500), and an infinity is not what a caller who
 * wrote a number meant.
 */
function finite(name: string, n: number, where = 'a number'): number {
  if (!Number.isFinite(n))
    throw invalid(name, `${where} must be finite, within ±1.8e308 (what a double holds)`);
  return n;
}

/** The type a JSON value implies: string, integer, float, boolean, null, or a list of one of them. */
function byValue(name: string, value: unknown): { type: string; value: ParamValue } {
  if (Array.isArray(value)) {
    const items = value as unknown[];
    const kinds = new Set<string>();
    let nullable = false;
    for (const item of items) {
      if (item === null) nullable = true;
      else if (typeof item === 'string') kinds.add('String');
      else if (typeof item === 'boolean') kinds.add('Bool');
      else if (typeof item === 'number') kinds.add(numberType(finite(name, item, 'every number of a list')));
      else throw invalid(name, 'a list may hold only strings, numbers, booleans and nulls');
    }
    if (kinds.has('Int64') && kinds.has('Float64')) kinds.delete('Int64');
    if (kinds.size > 1)
      throw invalid(name, 'every item of a list must be of one type (all strings, or all numbers, …)');
    const item = [...kinds][0] ?? 'Nothing';
    return { type: `Array(${nullable ? `Nullable(${item})` : item})`, value: items as ParamValue[] };
  }
  if (value === null) return { type: 'Nullable(Nothing)', value: null };
  switch (typeof value) {
    case 'string':
      return { type: 'String', value };
    case 'boolean':
      return { type: 'Bool', value };
    case 'number':
      return { type: numberType(finite(name, value)), value };
    default:
      throw invalid(name, 'a value is a string, a number, a boolean, null, or a list of them');
  }
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const ISO_DATETIME = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?(Z|[+-]\d{2}:?\d{2})?$/;

function byDeclaredType(
  name: string,
  value: unknown,
  type: VariableType,
): { type: string; value: ParamValue } {
  switch (type) {
    case 'string':
      if (typeof value !== 'string') throw invalid(name, 'must be a string');
      return { type: 'String', value };
    case 'number': {
      const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
      if (typeof n !== 'number' || Number.isNaN(n)) throw invalid(name, 'must be a number');
      finite(name, n);
      return { type: numberType(n), value: n };
    }
    case 'boolean':
      if (value === true || value === 'true') return { type: 'Bool', value: true };
      if (value === false || value === 'false') return { type: 'Bool', value: false };
      throw invalid(name, 'must be true or false');
    case 'date': {
      const m = typeof value === 'string' ? DATE.exec(value) : null;
      if (!m || !validDate(Number(m[1]), Number(m[2]), Number(m[3])))
        throw invalid(name, 'must be a date, YYYY-MM-DD');
      return { type: 'Date', value: value as string };
    }
    case 'datetime': {
      const m = typeof value === 'string' ? ISO_DATETIME.exec(value) : null;
      // Without an offset a time is UTC (Date.parse would read it in the server's zone).
      const ms = m
        ? Date.parse(m[4] === undefined && m[1] !== undefined ? `${m[0].replace(' ', 'T')}Z` : m[0])
        : Number.NaN;
      if (Number.isNaN(ms))
        throw invalid(name, 'must be an ISO 8601 date and time, e.g. 2026-01-31T12:00:00Z');
      // ClickHouse's own text form, in UTC: what a DateTime64(6, 'UTC') parameter reads without ambiguity.
      return {
        type: "DateTime64(6, 'UTC')",
        value: new Date(ms).toISOString().replace('T', ' ').replace('Z', ''),
      };
    }
    case 'list':
      if (!Array.isArray(value)) throw invalid(name, 'must be a list');
      return byValue(name, value);
  }
}

function validDate(y: number, m: number, d: number): boolean {
  if (m < 1 || m > 12 || d < 1) return false;
  if (m !== 2) return d <= DAYS_IN_MONTH[m - 1]!;
  const leap = y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
  return d <= (leap ? 29 : 28);
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
