/**
 * NULL-safe comparisons: a comparison as HogQL means it when a side may be NULL (a property, which is NULL
 * when missing, a column of a subquery or CTE that may be NULL, or a NULL written in the query), and the
 * regex operators as the match() calls HogQL prints.
 */
import type { Between, Binary, Expr, Field } from '../dialect/mod.ts';
import { call, ONE, str, ZERO } from './nodes.ts';
import type { Properties } from './properties.ts';

export class NullSafety {
  /** Rewritten references to a column of a subquery or CTE that may be NULL. */
  readonly #nullable = new WeakSet<Expr>();
  readonly #properties: Properties;
  /** Set while resolving a JOIN's ON: its comparisons are left as written (nullSafe). */
  #inJoinOn = false;

  constructor(properties: Properties) {
    this.#properties = properties;
  }

  /** Records a reference to a column that may be NULL. */
  nullable(field: Field): void {
    this.#nullable.add(field);
  }

  /** Resolves a JOIN's ON (with `resolve`), whose comparisons are left as written. */
  joinOn<T>(resolve: () => T): T {
    const inJoinOn = this.#inJoinOn;
    this.#inJoinOn = true;
    try {
      return resolve();
    } finally {
      this.#inJoinOn = inJoinOn;
    }
  }

  /** Whether an expression may be NULL as far as the resolver knows: a NULL literal, or a property read. */
  mayBeNull(e: Expr): boolean {
    if (e.kind === 'null' || this.#nullable.has(e)) return true;
    return this.#properties.isRead(e);
  }

  /**
   * A comparison as HogQL means it when a side may be NULL (a property, which is NULL when missing, or a NULL
   * written in the query): NULL is a value like any other, so `properties.x != 'a'` holds for an event without
   * `x`, `properties.x = NULL` is `isNull(properties.x)`, and `<`, `LIKE`, … on a missing value are false rather
   * than NULL (HogQL's printer; PostHog's `is_not` filters count missing values the same way). Columns that are
   * never NULL keep the plain comparison, which the engine's indexes read.
   */
  nullSafe(b: Binary): Expr {
    const equality =
      b.op === '=' || b.op === 'like' || b.op === 'ilike' || b.op === 'regex' || b.op === 'iRegex';
    const inequality =
      b.op === '!=' ||
      b.op === 'notLike' ||
      b.op === 'notILike' ||
      b.op === 'notRegex' ||
      b.op === 'notIRegex';
    const ordered = b.op === '<' || b.op === '<=' || b.op === '>' || b.op === '>=';
    const value = regexCall(b);
    if (!(equality || inequality || ordered) || this.#inJoinOn) return value;
    if (!this.mayBeNull(b.left) && !this.mayBeNull(b.right)) return value;
    const [left, right] = [b.left, b.right];
    if (ordered) return call('ifNull', [value, ZERO]);
    if (left.kind === 'null' || right.kind === 'null') {
      const other = left.kind === 'null' ? right : left;
      return call(equality ? 'isNull' : 'isNotNull', [other]);
    }
    const literal = (x: Expr): boolean => x.kind === 'string' || x.kind === 'number' || x.kind === 'boolean';
    if (literal(left) || literal(right)) return call('ifNull', [value, equality ? ZERO : ONE]);
    const both = equality
      ? { kind: 'and' as const, operands: [call('isNull', [left]), call('isNull', [right])] }
      : { kind: 'or' as const, operands: [call('isNotNull', [left]), call('isNotNull', [right])] };
    return call('ifNull', [value, both]);
  }

  /** A resolved BETWEEN: as HogQL, a comparison with a missing value is false, not NULL. */
  between(between: Between): Expr {
    const nullable =
      !this.#inJoinOn && [between.expr, between.low, between.high].some((x) => this.mayBeNull(x));
    return nullable ? call('ifNull', [between, ZERO]) : between;
  }
}

/** A regex operator as the match() call HogQL prints; any other comparison as it is. */
function regexCall(b: Binary): Expr {
  if (b.op !== 'regex' && b.op !== 'notRegex' && b.op !== 'iRegex' && b.op !== 'notIRegex') return b;
  const insensitive = b.op === 'iRegex' || b.op === 'notIRegex';
  const pattern = insensitive ? call('concat', [str('(?i)'), b.right]) : b.right;
  const match = { ...call('match', [b.left, pattern]), ...(b.pos ? { pos: b.pos } : {}) };
  return b.op === 'notRegex' || b.op === 'notIRegex' ? { kind: 'not', operand: match } : match;
}
