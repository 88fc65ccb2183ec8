/**
 * Reading an insight query object (PostHog's schema) field by field, with every refusal naming the field's
 * path (`query.series[1].math`) in `attr`. A field Weir does not know is refused; so is a known field with
 * a value Weir does not support, and the detail says which values it does. Fields that only change how
 * PostHog draws a chart (legend, colours, decimal places) are taken and ignored: they leave the table as it is.
 */
import { AppError } from '../../errors/app-error.ts';

export type JsonObject = Readonly<Record<string, unknown>>;

/** 400 `invalid_query` for the field at `attr`. */
export function invalidInsight(attr: string, detail: string): AppError {
  return new AppError('invalid_query', { detail, attr });
}

function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 64 ? `${text.slice(0, 61)}...` : text;
}

export class ObjectReader {
  private constructor(
    readonly value: JsonObject,
    /** Where this object is, e.g. `query.series[0]`. */
    readonly path: string,
  ) {}

  /** The object at `path`; 400 when `value` is not a JSON object. */
  static of(value: unknown, path: string, what = 'an object'): ObjectReader {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw invalidInsight(path, `'${path}' must be ${what}; got ${shown(value)}.`);
    }
    return new ObjectReader(value as JsonObject, path);
  }

  /**
   * Refuses every field but `known` (read by the caller) and `ignored` (taken and left unused, as display
   * options are).
   */
  only(known: readonly string[], ignored: readonly string[] = []): this {
    for (const key of Object.keys(this.value)) {
      if (known.includes(key) || ignored.includes(key)) continue;
      throw invalidInsight(
        this.at(key),
        `Unknown field '${this.at(key).slice(0, 96)}'; ${this.path} takes ${known.join(', ')}.`,
      );
    }
    return this;
  }

  at(name: string): string {
    return `${this.path}.${name}`;
  }

  /** Whether the field is there and not null (PostHog's clients send null for "not set"). */
  has(name: string): boolean {
    return this.value[name] !== undefined && this.value[name] !== null;
  }

  raw(name: string): unknown {
    return this.value[name];
  }

  string(name: string): string | undefined {
    if (!this.has(name)) return undefined;
    const v = this.value[name];
    if (typeof v !== 'string')
      throw invalidInsight(this.at(name), `'${this.at(name)}' must be a string; got ${shown(v)}.`);
    return v;
  }

  requiredString(name: string, nonEmpty = true): string {
    const v = this.string(name);
    if (v === undefined) throw invalidInsight(this.at(name), `'${this.at(name)}' is required.`);
    if (nonEmpty && v.trim() === '')
      throw invalidInsight(this.at(name), `'${this.at(name)}' must not be empty.`);
    return v;
  }

  oneOf<T extends string>(name: string, values: readonly T[], fallback: T): T;
  oneOf<T extends string>(name: string, values: readonly T[]): T | undefined;
  oneOf<T extends string>(name: string, values: readonly T[], fallback?: T): T | undefined {
    if (!this.has(name)) return fallback;
    const v = this.value[name];
    if (typeof v !== 'string' || !(values as readonly string[]).includes(v)) {
      throw invalidInsight(
        this.at(name),
        `'${this.at(name)}' is ${shown(v)}, which Weir does not support; it takes ${values.join(', ')}.`,
      );
    }
    return v as T;
  }

  integer(name: string, min: number, max: number, fallback: number): number;
  integer(name: string, min: number, max: number): number | undefined;
  integer(name: string, min: number, max: number, fallback?: number): number | undefined {
    if (!this.has(name)) return fallback;
    const v = this.value[name];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      throw invalidInsight(
        this.at(name),
        `'${this.at(name)}' must be a whole number from ${min} to ${max}; got ${shown(v)}.`,
      );
    }
    return v;
  }

  boolean(name: string, fallback: boolean): boolean {
    if (!this.has(name)) return fallback;
    const v = this.value[name];
    if (typeof v !== 'boolean')
      throw invalidInsight(this.at(name), `'${this.at(name)}' must be true or false; got ${shown(v)}.`);
    return v;
  }

  /** A field that, when set, must be this one value (a feature Weir has only one way of). */
  only1<T>(name: string, accepted: readonly T[], why: string): void {
    if (!this.has(name)) return;
    if (!accepted.includes(this.value[name] as T)) {
      throw invalidInsight(
        this.at(name),
        `'${this.at(name)}' = ${shown(this.value[name])} is not supported: ${why}`,
      );
    }
  }

  object(name: string): ObjectReader | undefined {
    return this.has(name) ? ObjectReader.of(this.value[name], this.at(name)) : undefined;
  }

  /** The items of an array field with each one's path; [] when absent. */
  array(name: string): { value: unknown; path: string }[] {
    if (!this.has(name)) return [];
    const v = this.value[name];
    if (!Array.isArray(v))
      throw invalidInsight(this.at(name), `'${this.at(name)}' must be a list; got ${shown(v)}.`);
    return v.map((item: unknown, i) => ({ value: item, path: `${this.at(name)}[${i}]` }));
  }
}
