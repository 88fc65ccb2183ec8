/**
 * Strings made well formed: every lone surrogate (legal in a JS string and as a JSON `\uD800` escape, never
 * in UTF-8) and every NUL become U+FFFD. ClickHouse refuses a lone surrogate's escape in JSON input and
 * reads a stored one back as a broken value; NUL is made U+FFFD as SPEC §2 says for every string of an event.
 */

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** `s` with each lone surrogate and NUL made U+FFFD. */
export function wellFormed(s: string): string {
  const out = s.replace(LONE_SURROGATE, '\uFFFD');
  return out.includes('\u0000') ? out.replaceAll('\u0000', '\uFFFD') : out;
}

/**
 * One escape of JSON text, matched left to right so that an escaped backslash (`\\`) is taken whole and what
 * follows it is never read as an escape: a high surrogate's escape with the low one after it (a pair: kept),
 * a high one alone, a low one alone, NUL, or any other escape (kept).
 */
const JSON_ESCAPE =
  /\\(?:u([dD][89abAB][0-9a-fA-F]{2})(\\u[dD][c-fC-F][0-9a-fA-F]{2})?|u([dD][c-fC-F][0-9a-fA-F]{2})|(u0000)|[^u])/g;

/**
 * JSON text whose strings, keys and values at any depth, parse well formed: each escape of a lone surrogate
 * or of NUL is made `\uFFFD`. Only escapes are looked at, so `text` must hold no raw lone surrogate (UTF-8
 * input cannot; see `withoutLoneSurrogates` for text that may). Text with no `\u` is returned as it is, at
 * the cost of one search.
 */
export function wellFormedJson(text: string): string {
  if (!text.includes('\\u')) return text;
  return text.replace(
    JSON_ESCAPE,
    (m: string, high?: string, low?: string, loneLow?: string, nul?: string) =>
      (high !== undefined && low === undefined) || loneLow !== undefined || nul !== undefined ? '\\uFFFD' : m,
  );
}

/**
 * `s` with each lone surrogate made U+FFFD and nothing else changed: for JSON text not decoded from UTF-8
 * (lz-string's output), before `wellFormedJson`. (A raw NUL is left for the JSON parser to refuse.)
 */
export function withoutLoneSurrogates(s: string): string {
  return s.replace(LONE_SURROGATE, '\uFFFD');
}

/** The first `units` UTF-16 units of `s`, one fewer where the cut would split a surrogate pair. */
export function cut(s: string, units: number): string {
  if (s.length <= units) return s;
  const code = s.charCodeAt(units - 1);
  return s.slice(0, code >= 0xd800 && code <= 0xdbff ? units - 1 : units);
}
