/**
 * Ways to hide a retried event's second copy, timed on the same question: FINAL (what Weir prints), one row
 * per uuid with LIMIT 1 BY, and one row per uuid with GROUP BY; raw (no deduplication) as the floor. Each
 * alternative here is written at its best: the filter inside, before deduplication (valid only because
 * copies are identical). Weir's printer could not do that for every filter of a query; FINAL applies to any.
 */
import type { ChdbClient } from '../../src/store/embedded/chdb-client.ts';

export interface DedupRow {
  readonly question: string;
  readonly ms: Readonly<Record<string, number>>;
  /** Whether each way answers as FINAL does. */
  readonly same: Readonly<Record<string, boolean>>;
}

const FILTER = "project_id = 1 AND event = '$pageview'";

const WAYS: Record<string, Record<string, string>> = {
  'count pageviews': {
    FINAL: `SELECT count() FROM events FINAL WHERE ${FILTER}`,
    'LIMIT 1 BY uuid': `SELECT count() FROM (SELECT uuid FROM events WHERE ${FILTER} LIMIT 1 BY uuid)`,
    'GROUP BY uuid': `SELECT count() FROM (SELECT uuid FROM events WHERE ${FILTER} GROUP BY uuid)`,
    'raw (duplicates counted)': `SELECT count() FROM events WHERE ${FILTER}`,
  },
  'daily pageviews': {
    FINAL: `SELECT toDate(timestamp) AS day, count() FROM events FINAL WHERE ${FILTER} GROUP BY day ORDER BY day`,
    'LIMIT 1 BY uuid': `SELECT toDate(timestamp) AS day, count() FROM (SELECT uuid, timestamp FROM events WHERE ${FILTER} LIMIT 1 BY uuid) GROUP BY day ORDER BY day`,
    'GROUP BY uuid': `SELECT toDate(t) AS day, count() FROM (SELECT uuid, any(timestamp) AS t FROM events WHERE ${FILTER} GROUP BY uuid) GROUP BY day ORDER BY day`,
    'raw (duplicates counted)': `SELECT toDate(timestamp) AS day, count() FROM events WHERE ${FILTER} GROUP BY day ORDER BY day`,
  },
};

export async function measureDedup(store: ChdbClient, rounds: number): Promise<DedupRow[]> {
  const out: DedupRow[] = [];
  for (const [question, ways] of Object.entries(WAYS)) {
    const answers: Record<string, string> = {};
    for (const [way, sql] of Object.entries(ways))
      answers[way] = JSON.stringify((await store.queryTable(sql, {})).rows);
    const times: Record<string, number[]> = {};
    for (let r = 0; r < rounds; r++) {
      for (const [way, sql] of Object.entries(ways)) {
        const started = performance.now();
        await store.queryTable(sql, {});
        (times[way] ??= []).push(performance.now() - started);
      }
    }
    out.push({
      question,
      ms: Object.fromEntries(
        Object.entries(times).map(([way, t]) => [way, t.sort((a, b) => a - b)[t.length >> 1]!]),
      ),
      same: Object.fromEntries(Object.keys(ways).map((way) => [way, answers[way] === answers['FINAL']])),
    });
  }
  return out;
}
