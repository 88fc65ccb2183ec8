import type { Span } from '../dialect/mod.ts';

/**
 * A query that parses but names something Weir does not serve: an unknown table, column or function, a
 * table function, another database, `*` out of place. `reason` is the sentence alone; `message` adds the
 * place (as DialectSyntaxError does), ready for an error body's `detail`.
 */
export class QueryResolveError extends Error {
  readonly reason: string;
  readonly line: number | null;
  readonly column: number | null;

  constructor(reason: string, at: Span | undefined) {
    super(at ? `${reason} (line ${at.line}, column ${at.column})` : reason);
    this.name = 'QueryResolveError';
    this.reason = reason;
    this.line = at?.line ?? null;
    this.column = at?.column ?? null;
  }
}

/** A name as a message shows it: backticks around anything that is not a plain word. */
export function shown(name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? `'${name}'` : `\`${name}\``;
}

/** "a, b and c", at most `max` items ("… and 12 more"). */
export function listed(items: readonly string[], max = 12): string {
  if (items.length === 0) return 'none';
  const head = items.slice(0, max);
  const more = items.length - head.length;
  if (more > 0) return `${head.join(', ')} and ${more} more`;
  return head.length === 1 ? head[0]! : `${head.slice(0, -1).join(', ')} and ${head.at(-1)!}`;
}
