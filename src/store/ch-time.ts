/** Kept apart from the store adapters so that what formats rows (ingest) loads no engine. */

const DAY_MS = 86_400_000;
let cachedDay = Number.NaN;
let cachedDayText = '';

const pad2 = (n: number): string => (n < 10 ? `0${n}` : `${n}`);
const pad3 = (n: number): string => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`);

/**
 * ClickHouse's DateTime64 text form of a millisecond timestamp ('YYYY-MM-DD hh:mm:ss.mmm', UTC). Hot: it runs
 * twice per stored event, so the date part is cached per day and the time part is plain arithmetic rather
 * than a Date and an ISO string per call; and the last two texts are kept, because the events of a request
 * share their `created_at`, and events without a timestamp share it as their `timestamp` too (each text is
 * a handful of concatenated strings, a fifteenth of what ingest allocated per event in batch mode).
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

function formatChTime(ms: number): string {
  const day = Math.floor(ms / DAY_MS);
  if (day !== cachedDay) {
    cachedDay = day;
    cachedDayText = new Date(day * DAY_MS).toISOString().slice(0, 10);
  }
  let rest = ms - day * DAY_MS;
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  rest -= m * 60_000;
  const s = Math.floor(rest / 1000);
  return `${cachedDayText} ${pad2(h)}:${pad2(m)}:${pad2(s)}.${pad3(rest - s * 1000)}`;
}
