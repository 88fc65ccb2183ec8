/**
 * Property access. `properties.$x`, `properties['x']`, `properties.a.b` and the same on every JSON column
 * become `JSONExtract(col, 'x', 'Nullable(String)')`: the value as text (strings decoded, numbers and booleans
 * as written, objects and arrays as JSON), NULL when the key is missing or null — one parse per access. A
 * property whose definition gives it a type (Numeric, DateTime, Boolean) is read as that type, as HogQL does.
 */
import type { Binary, Expr, Field, Span } from '../dialect/mod.ts';
import { call, str } from './nodes.ts';
import type { PropertyOwner } from './schema.ts';

/** A project's property types (PropertyTypes of src/core/property-types.ts fits). */
export interface PropertyTypeLookup {
  event(name: string): string | undefined;
  person(name: string): string | undefined;
}

/** A JSON column, or keys read from one: more keys can follow (`properties['a']['b']`). */
export interface JsonRef {
  readonly column: Field;
  readonly keys: readonly Expr[];
  /** Whose property definitions type its keys. */
  readonly owner?: PropertyOwner;
}

/**
 * Functions that parse their argument as text (HogQL's `_STRING_INPUT_CONVERSIONS`, and ClickHouse's own
 * names of the same): a typed property given to one is left as text, or the parse would refuse a number.
 */
const PARSES_TEXT =
  /^(?:to(?:u?int\d*|float(?:32|64)?|decimal\d*)or(?:zero|null|default)|parsedatetime\w*)$/i;

const COMPARISONS = new Set(['=', '!=', '<', '<=', '>', '>=']);

/** The JSON columns and reads of one resolution, and the property types that type them. */
export class Properties {
  /** Rewritten nodes that are a JSON column or a read from one. */
  readonly #json = new WeakMap<Expr, JsonRef>();
  readonly #types: PropertyTypeLookup | undefined;
  /** Set while resolving the arguments of a function that parses text (PARSES_TEXT). */
  #textArgs = false;

  constructor(types: PropertyTypeLookup | undefined) {
    this.#types = types;
  }

  /** What JSON a rewritten node is: a JSON column, a read of keys from one, or nothing (undefined). */
  ref(e: Expr): JsonRef | undefined {
    return this.#json.get(e);
  }

  /** Whether a rewritten node reads keys of a JSON column, and so is NULL when the key is missing. */
  isRead(e: Expr): boolean {
    const ref = this.#json.get(e);
    return ref !== undefined && ref.keys.length > 0;
  }

  /** Records a reference to a JSON column itself, whose keys may be read further (`properties['x']`). */
  column(field: Field, ref: JsonRef): void {
    this.#json.set(field, ref);
  }

  /** Resolves the arguments of a call to `name` (with `resolve`), as text when the function parses text. */
  args<T>(name: string, resolve: () => T): T {
    const textArgs = this.#textArgs;
    this.#textArgs = PARSES_TEXT.test(name);
    try {
      return resolve();
    } finally {
      this.#textArgs = textArgs;
    }
  }

  extract(ref: JsonRef, pos: Span | undefined): Expr {
    const extraction: Expr = {
      ...call('JSONExtract', [ref.column, ...ref.keys, str('Nullable(String)')]),
      pos,
    };
    const typed = this.typed(ref, extraction);
    this.#json.set(typed, ref);
    return typed;
  }

  /**
   * A property read as its definition types it, as HogQL's property swapper does (transforms/property_types.py):
   * only a top-level key of event or person properties, and never as the argument of a function that parses
   * text itself.
   */
  private typed(ref: JsonRef, text: Expr): Expr {
    const key = ref.keys.length === 1 ? ref.keys[0]! : undefined;
    if (this.#types === undefined || this.#textArgs || key?.kind !== 'string') return text;
    let type: string | undefined;
    if (ref.owner === 'event') type = this.#types.event(key.value);
    else if (ref.owner === 'person') type = this.#types.person(key.value);
    switch (type) {
      case 'Numeric':
        return call('accurateCastOrNull', [text, str('Float64')]);
      case 'DateTime':
        return call('parseDateTime64BestEffortOrNull', [text, { kind: 'number', text: '6' }, str('UTC')]);
      case 'Boolean':
        return call('toBool', [
          call('transform', [
            text,
            { kind: 'array', items: [str('true'), str('false')] },
            {
              kind: 'array',
              items: [
                { kind: 'number', text: '1' },
                { kind: 'number', text: '0' },
              ],
            },
            { kind: 'null' },
          ]),
        ]);
      default:
        return text;
    }
  }

  /**
   * A property read as text compared with a number literal (`properties.code = 10`) compares with the number's
   * text, as docs/hogql.md says: the engine finds no common type for a String and a number and refuses the
   * query, where HogQL users expect the comparison to hold for `"10"` (and `10`, whose text is the same).
   */
  numberAsText(b: Binary): Binary {
    if (!COMPARISONS.has(b.op)) return b;
    // Only column references are marked nullable (null-safety.ts), so a JSONExtract call may be NULL
    // exactly when it reads a key.
    const text = (x: Expr): boolean => x.kind === 'call' && x.name === 'JSONExtract' && this.isRead(x);
    if (text(b.left) && numberLiteral(b.right)) return { ...b, right: asText(b.right) };
    if (text(b.right) && numberLiteral(b.left)) return { ...b, left: asText(b.left) };
    return b;
  }
}

/** A number written in the query, or its negation. */
function numberLiteral(e: Expr): boolean {
  return e.kind === 'number' || (e.kind === 'negate' && e.operand.kind === 'number');
}

/** A number literal as the engine writes the number: `10`, `1.5`, `-3`, `1000` for `1e3`. */
function asText(e: Expr): Expr {
  const number = e.kind === 'negate' ? e.operand : e;
  const written = number.kind === 'number' ? number.text : '';
  const sign = e.kind === 'negate' ? '-' : '';
  // Digits alone are kept as written, whatever their size; anything else is the number's shortest text.
  return str(/^\d+$/.test(written) ? `${sign}${written}` : String(Number(`${sign}${written}`)));
}
