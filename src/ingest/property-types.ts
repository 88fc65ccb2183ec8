import type { PropertyType } from '../core/property-types.ts';

/**
 * Property type detection as PostHog does it (its property-definitions service, `detect_property_type`):
 * the type a property gets from the first value seen of it. PostHog's rules, in order:
 *
 * 1. By key (compared lower-cased): `utm_*`, `$initial_utm_*`, `$feature/*`, `$feature_flag_response` and
 *    `$survey_response*` are always String — their first value often looks like a number or a boolean while
 *    later ones do not.
 * 2. A number whose key names a time (contains `time`, `date`, `_at`, `-at`, `createdat` or `updatedat`) and
 *    that is a whole number no older than six months as Unix seconds (milliseconds are larger still) is a
 *    DateTime.
 * 3. By value: a string that is `true`/`false`/`TRUE`/`FALSE` (trimmed) is Boolean; a string that looks
 *    like a date (RFC 3339, RFC 2822, or `YYYY-MM-DD` / `MM-DD-YYYY` with `-` or `/`, optionally followed by
 *    a time) is a DateTime; any other string is a String — a number sent as text (`"10"`) stays a String,
 *    as in PostHog since 2023; numbers are Numeric, booleans Boolean; null, arrays and objects have no type.
 */

/** Six months, in seconds: how old a Unix time may be for a numeric property to read as a DateTime. */
const SIX_MONTHS_SECONDS = 15_768_000;
/** Largest whole number PostHog reads as an unsigned 64-bit integer (a larger one is a float there). */
const MAX_U64 = 2 ** 64;

/** Key fragments that name a time. `timestamp` is not needed: it contains `time`. */
const DATETIME_KEY_WORDS = ['time', 'date', '_at', '-at', 'createdat', 'updatedat'];

/**
 * A date, or a date and a time, in the shapes people send: year first or last, `-` or `/`. Deliberately loose
 * (month 13 passes): it reads intent, and only decides the type a property is first given.
 */
const DATE_PREFIX =
  /^(?:[0-9]{4}[/-][0-2][0-9][/-][0-3][0-9]|[0-2][0-9][/-][0-3][0-9][/-][0-9]{4})(?:[ T][0-2][0-9]:[0-6][0-9]:[0-6][0-9].*)?$/;

/** RFC 3339 date-time; the ranges are checked apart. */
const RFC_3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;

/** RFC 2822 date-time (`Tue, 1 Jul 2003 10:52:37 +0200`), with the obsolete zones and two-digit years. */
const RFC_2822 =
  /^\s*(?:(?:mon|tue|wed|thu|fri|sat|sun)\s*,\s*)?(\d{1,2})\s+(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)\s+(\d{2,4})\s+(\d{2})\s*:\s*(\d{2})(?:\s*:\s*(\d{2}))?\s+(?:[+-]\d{4}|ut|gmt|[ecmp][sd]t|[a-ik-z])\s*$/i;

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

/**
 * The type PostHog gives a property from this key and value, or undefined when the value gives none.
 * `nowSeconds` is the present, for the six-month rule (a parameter so tests can fix it).
 */
export function detectPropertyType(
  key: string,
  value: unknown,
  nowSeconds: number = Date.now() / 1000,
): PropertyType | undefined {
  const k = key.toLowerCase();
  if (
    k.startsWith('utm_') ||
    k.startsWith('$initial_utm_') ||
    k.startsWith('$feature/') ||
    k === '$feature_flag_response' ||
    k.startsWith('$survey_response')
  ) {
    return 'String';
  }
  switch (typeof value) {
    case 'number':
      return namesTime(k) && isRecentUnixTime(value, nowSeconds) ? 'DateTime' : 'Numeric';
    case 'boolean':
      return 'Boolean';
    case 'string': {
      // PostHog also tries a string against the date shapes when the key names a time, untrimmed; a string
      // that passes that passes the trimmed test below too, so that test alone decides.
      const s = value.trim();
      if (s === 'true' || s === 'false' || s === 'TRUE' || s === 'FALSE') return 'Boolean';
      return isLikelyDate(s) ? 'DateTime' : 'String';
    }
    default:
      return undefined;
  }
}

function namesTime(lowerKey: string): boolean {
  for (const word of DATETIME_KEY_WORDS) if (lowerKey.includes(word)) return true;
  return false;
}

/** A whole, non-negative number no older than six months read as Unix seconds (PostHog: `as_u64`). */
function isRecentUnixTime(n: number, nowSeconds: number): boolean {
  return Number.isInteger(n) && n >= 0 && n < MAX_U64 && n >= Math.floor(nowSeconds) - SIX_MONTHS_SECONDS;
}

/** Whether a string looks like a date: RFC 3339, RFC 2822, or one of the loose shapes of DATE_PREFIX. */
export function isLikelyDate(s: string): boolean {
  return DATE_PREFIX.test(s) || isRfc3339(s) || isRfc2822(s);
}

function isRfc3339(s: string): boolean {
  const m = RFC_3339.exec(s);
  if (!m) return false;
  const [, year, month, day, hour, minute, second, offsetHour, offsetMinute] = m;
  return (
    validDate(Number(year), Number(month), Number(day)) &&
    validTime(Number(hour), Number(minute), Number(second)) &&
    (offsetHour === undefined || (Number(offsetHour) < 24 && Number(offsetMinute) < 60))
  );
}

function isRfc2822(s: string): boolean {
  const m = RFC_2822.exec(s);
  if (!m) return false;
  const [, day, month, yearText, hour, minute, second] = m;
  let year = Number(yearText);
  // RFC 2822's obsolete years: two digits are 1950-2049, three are counted from 1900.
  if (yearText!.length === 2) year += year < 50 ? 2000 : 1900;
  else if (yearText!.length === 3) year += 1900;
  return (
    validDate(year, MONTHS.indexOf(month!.toLowerCase()) + 1, Number(day)) &&
    validTime(Number(hour), Number(minute), second === undefined ? 0 : Number(second))
  );
}

function validDate(year: number, month: number, day: number): boolean {
  if (month < 1 || month > 12 || day < 1) return false;
  return day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** A second of 60 is a leap second, which both RFCs allow. */
function validTime(hour: number, minute: number, second: number): boolean {
  return hour < 24 && minute < 60 && second <= 60;
}
