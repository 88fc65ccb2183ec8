/**
 * The benchmark's data, made by the engine itself (`INSERT … SELECT FROM numbers(…)`): `events` rows over
 * 90 days in time-ordered chunks, as ingestion writes them (9 in 10 for project 1, the rest for project 2),
 * 200,000 persons per project, and a share of retried events stored a second time under the same uuid.
 */
import type { ChdbClient } from '../../src/store/embedded/chdb-client.ts';

export interface DatasetOptions {
  readonly events: number;
  /** Inserts of events, each a consecutive stretch of time. @default 10 */
  readonly chunks?: number;
  /** Events stored twice (a retried request), from the start of the data. @default events / 1000 */
  readonly retried?: number;
}

const BROWSERS = "['Chrome', 'Chrome', 'Safari', 'Firefox', 'Edge']";
const EVENTS =
  "['$pageview', '$pageview', '$pageview', '$autocapture', 'signed up', '$pageleave', 'order completed', '$identify']";
const PLANS = "['free', 'free', 'pro', 'enterprise']";
const PERSONS = 200_000;

/** One event per `number`; the same number gives the same event (so a retried copy is the same row). */
function eventsSelect(total: number, from: number, count: number): string {
  return `
    SELECT
      1 + (number % 10 = 0) AS project_id,
      reinterpretAsUUID(cityHash64(number, 'uuid')) AS uuid,
      ${EVENTS}[1 + cityHash64(number, 'event') % 8] AS event,
      concat('user-', toString(cityHash64(number, 'person') % ${PERSONS})) AS distinct_id,
      reinterpretAsUUID(cityHash64(number, 'person') % ${PERSONS}) AS person_id,
      toDateTime64('2026-01-01 00:00:00', 6, 'UTC') + toIntervalMillisecond(intDiv(number * 7776000000, ${total})) AS timestamp,
      concat(
        '{"$browser":"', ${BROWSERS}[1 + cityHash64(number, 'browser') % 5],
        '","$os":"', ['Mac OS X', 'Windows', 'Linux', 'iOS', 'Android'][1 + cityHash64(number, 'os') % 5],
        '","$current_url":"https://example.com/page/', toString(cityHash64(number, 'url') % 500),
        '","$session_id":"s-', toString(cityHash64(number, 'session') % 2000000),
        '","amount":', toString(cityHash64(number, 'amount') % 1000), '}'
      ) AS properties,
      concat(
        '{"email":"user', toString(cityHash64(number, 'person') % ${PERSONS}),
        '@example.com","plan":"', ${PLANS}[1 + (cityHash64(number, 'person') % ${PERSONS}) % 4], '"}'
      ) AS person_properties,
      'full' AS person_mode,
      timestamp AS created_at
    FROM numbers(${from}, ${count})`;
}

export async function generate(store: ChdbClient, options: DatasetOptions): Promise<void> {
  const chunks = options.chunks ?? 10;
  const per = Math.ceil(options.events / chunks);
  const columns =
    'project_id, uuid, event, distinct_id, person_id, timestamp, properties, person_properties, person_mode, created_at';
  for (let c = 0; c < chunks; c++) {
    const count = Math.min(per, options.events - c * per);
    await store.command(`INSERT INTO events (${columns}) ${eventsSelect(options.events, c * per, count)}`);
  }
  const retried = options.retried ?? Math.floor(options.events / 1000);
  if (retried > 0)
    await store.command(`INSERT INTO events (${columns}) ${eventsSelect(options.events, 0, retried)}`);
  await store.command(`
    INSERT INTO persons (project_id, id, properties, is_identified, created_at, version)
    SELECT
      project,
      reinterpretAsUUID(toUInt64(number)),
      concat('{"email":"user', toString(number), '@example.com","plan":"', ${PLANS}[1 + number % 4], '"}'),
      number % 2,
      toDateTime64('2026-01-01 00:00:00', 6, 'UTC'),
      1
    FROM numbers(${PERSONS}) ARRAY JOIN [1, 2] AS project`);
}
