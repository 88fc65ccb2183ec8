/** Kept apart from the store adapters so that what formats rows (ingest) loads no engine. */

const DAY_MS = 86_400_000;
let cachedDay = Number.NaN;
let cachedDayText = '';

const pad2 = (n: number): string => (n < 10 ? `0${n}` : `${n}`);
const pad3 = (n: number): string => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`);

/**
 * ClickHouse's DateTime64 text form of a millisecond timestamp ('YYYY-MM-DD hh:mm:ss.mmm', UTC). Hot: it runs
 * twice per stored event, so the text up to the minute is kept (formatChTime) and the rest is two lookups
 * rather than a Date and an ISO string per call; and the last two texts are kept, because the events of a
 * request share their `created_at`, and events without a timestamp share it as their `timestamp` too.
 */
export function chTime(ms: number): string {
  if (!Number.isInteger(ms)) ms = Math.floor(ms);
  if (ms === recentMs[0]) return recentText[0]!;
  if (ms === recentMs[1]) return recentText[1]!;
  const text = formatChTime(ms);
  recentMs[1] = recentMs[0]!;
  recentText[1] = recentText[0]!;
  recentMs[0] = ms;
  recentText[0] = text;
  return text;
}

const recentMs = new Float64Array([Number.NaN, Number.NaN]);
const recentText = ['', ''];

/** '00'..'59' and '000'..'999': the seconds and milliseconds of a text are two lookups, not new strings. */
const TWO_DIGITS = Array.from({ length: 60 }, (_, i) => pad2(i));
const THREE_DIGITS = Array.from({ length: 1000 }, (_, i) => pad3(i));
const MINUTE_MS = 60_000;

/**
 * The texts up to the minute ('YYYY-MM-DD hh:mm:') of the last two minutes formatted. Two, because a row has
 * two times that are usually minutes or years apart (an imported event's own and the time it was received):
 * with one, each would push the other out at every call.
 */
const minutes = new Float64Array([Number.NaN, Number.NaN]);
const minuteTexts = ['', ''];

/** Events each carrying their own time rarely repeat a millisecond, but events of one minute share its text. */
function formatChTime(ms: number): string {
  const minute = Math.floor(ms / MINUTE_MS);
  let head: string;
  if (minute === minutes[0]) head = minuteTexts[0]!;
  else if (minute === minutes[1]) head = minuteTexts[1]!;
  else {
    head = minuteText(minute);
    minutes[1] = minutes[0]!;
    minuteTexts[1] = minuteTexts[0]!;
    minutes[0] = minute;
    minuteTexts[0] = head;
  }
  const rest = ms - minute * MINUTE_MS;
  const s = Math.floor(rest / 1000);
  return `${head}${TWO_DIGITS[s]!}.${THREE_DIGITS[rest - s * 1000]!}`;
}

function minuteText(minute: number): string {
  const day = Math.floor(minute / 1440);
  if (day !== cachedDay) {
    cachedDay = day;
    cachedDayText = new Date(day * DAY_MS).toISOString().slice(0, 10);
  }
  const inDay = minute - day * 1440;
  return `${cachedDayText} ${TWO_DIGITS[Math.floor(inDay / 60)]!}:${TWO_DIGITS[inDay % 60]!}:`;
}
