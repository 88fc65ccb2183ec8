/**
 * PostHog's own HogQL parser (`@posthog/hogql-parser`, its C++ grammar built to WebAssembly) as an oracle:
 * whether PostHog's grammar takes a query. It answers for the parser only — a query it accepts may still be
 * refused later by PostHog's resolver or printer. It is slow (tens of milliseconds a query), so callers ask
 * once per query.
 */
import createHogQLParser from '@posthog/hogql-parser';

const parser = await createHogQLParser();

export type PosthogVerdict = { readonly ok: true } | { readonly ok: false; readonly message: string };

/** Whether PostHog's parser accepts `sql` as a SELECT (or a set of them, or a HogQLX tag). */
export function posthogAccepts(sql: string): PosthogVerdict {
  let out: unknown;
  try {
    out = JSON.parse(parser.parseSelect(sql, true));
  } catch (err) {
    // The module throws (rather than answering an error object) on input it cannot take at all.
    return { ok: false, message: `the parser threw: ${String(err)}` };
  }
  if (out !== null && typeof out === 'object' && (out as { error?: unknown }).error === true) {
    const e = out as { type?: unknown; message?: unknown };
    return { ok: false, message: `${String(e.type)}: ${String(e.message)}` };
  }
  return { ok: true };
}
