/** The two strict formats Capture V1 reads: RFC 3339 date-times and UUIDs. */

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/**
 * An RFC 3339 date-time (a zone is required; `t`, `z` and a space for `T` are taken, as PostHog's parser
 * takes them) in milliseconds since the epoch, digits past the millisecond dropped; undefined for anything
 * else, a day or time that does not exist included.
 */
export function parseRfc3339(text: string): number | undefined {
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetMinutes = 0;
  if (m[8] === undefined) {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 23 || om > 59) return undefined;
    offsetMinutes = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const ms = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, '0'));
  // setUTCFullYear, not Date.UTC, which reads years 0-99 as 1900-1999.
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute, second, ms);
  return d.getTime() - offsetMinutes * 60_000;
}

function daysIn(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

const HYPHENATED = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SIMPLE = /^[0-9a-f]{32}$/i;

/**
 * A UUID in the forms PostHog's parser takes (hyphenated, 32 digits, `{…}`, `urn:uuid:…`) as its canonical
 * text, lower case and hyphenated; undefined when it is none of them.
 */
export function canonicalUuid(text: string): string | undefined {
  let s = text;
  if (s.length === 45 && s.slice(0, 9).toLowerCase() === 'urn:uuid:') s = s.slice(9);
  else if (s.length === 38 && s.startsWith('{') && s.endsWith('}')) s = s.slice(1, -1);
  if (HYPHENATED.test(s)) return s.toLowerCase();
  if (s === text && SIMPLE.test(s)) {
    const l = s.toLowerCase();
    return `${l.slice(0, 8)}-${l.slice(8, 12)}-${l.slice(12, 16)}-${l.slice(16, 20)}-${l.slice(20)}`;
  }
  return undefined;
}
