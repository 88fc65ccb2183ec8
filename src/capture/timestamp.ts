/** The earliest event time the store keeps faithfully (year 0000 and earlier are silently mangled). */
export const MIN_TIMESTAMP_MS = Date.parse('0001-01-01T00:00:00.000Z');

/** An ISO date and time with no zone designator: `Date.parse` would read it in the server's zone. */
const NAIVE_DATE_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/;

/**
 * A client timestamp or `sent_at` in milliseconds since the epoch, or undefined when it is not a date Weir
 * can store. A date and time without a zone is UTC (as PostHog reads it), whatever the server's zone.
 */
export function parseTimestamp(text: string): number | undefined {
  const trimmed = text.trim();
  const ms = Date.parse(NAIVE_DATE_TIME.test(trimmed) ? `${trimmed.replace(' ', 'T')}Z` : trimmed);
  return inRange(ms) ? ms : undefined;
}

/** Whether `ms` is a time the store keeps as it is: from year 1, and one `Date` can hold. */
export function inRange(ms: number): boolean {
  return Number.isFinite(ms) && ms >= MIN_TIMESTAMP_MS && ms <= 8.64e15;
}
