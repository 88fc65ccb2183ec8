/**
 * A dataset for the query API tests: a few projects, written straight into the store's tables (as ingest
 * writes them), with what the queries must answer computed here in plain JavaScript, not in SQL.
 *
 * Each project has a small hand-written part (three persons, a funnel, a retried purchase stored twice, a
 * person with two versions and a deleted one, a group, ingestion warnings) and a generated part (seeded,
 * so the same every run). Project 2's rows carry the marker `SECRET` in every text column, so a test can
 * see that no answer to another project ever contains it.
 */
import type { Row, Store } from '../../src/core/ports.ts';

export const SECRET = 'SECRET';

export interface DatasetEvent {
  readonly project: number;
  readonly uuid: string;
  readonly event: string;
  readonly distinctId: string;
  readonly personId: string;
  /** ISO, UTC. */
  readonly timestamp: string;
  readonly properties: Record<string, unknown>;
  readonly personProperties: Record<string, unknown>;
  readonly group0?: string;
}

export interface Dataset {
  /** Every event, each once (the retried copy is not here). */
  readonly events: readonly DatasetEvent[];
  /** The uuid stored twice in each project (a retried request). */
  readonly retriedUuid: (project: number) => string;
}

let uuidSeq = 0;
function uuid(): string {
  uuidSeq += 1;
  return `00000000-0000-4000-8000-${uuidSeq.toString(16).padStart(12, '0')}`;
}

/** A person id from a project and a distinct id, stable. */
export function personOf(project: number, distinctId: string): string {
  let h = 0;
  for (const c of `${project}:${distinctId}`) h = (Math.imul(h, 31) + c.charCodeAt(0)) >>> 0;
  return `00000000-0000-4000-9000-${h.toString(16).padStart(12, '0')}`;
}

function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const BROWSERS = ['Chrome', 'Firefox', 'Safari', 'Edge'];
const GENERATED_EVENTS = ['$pageview', '$pageview', '$pageview', 'signed up', 'purchase'];

/** ClickHouse's DateTime64 text for an ISO time. */
function chTime(iso: string): string {
  return iso.replace('T', ' ').replace('Z', '');
}

function hand(project: number, marker: string): DatasetEvent[] {
  const e = (
    distinctId: string,
    event: string,
    timestamp: string,
    properties: Record<string, unknown>,
    extra: Partial<DatasetEvent> = {},
  ): DatasetEvent => ({
    project,
    uuid: uuid(),
    event: `${event}${marker}`,
    distinctId: `${distinctId}${marker}`,
    personId: personOf(project, distinctId),
    timestamp,
    properties: { ...properties, ...(marker ? { secret: `${SECRET}-${project}` } : {}) },
    personProperties: {
      email: `${distinctId}@example.com${marker}`,
      plan: distinctId === 'u1' ? 'pro' : 'free',
    },
    ...extra,
  });
  return [
    e('u1', '$pageview', '2026-01-01T09:00:00.000Z', { $browser: 'Chrome', $current_url: '/home', n: '1' }),
    e('u1', '$pageview', '2026-01-01T09:05:00.000Z', {
      $browser: 'Chrome',
      $current_url: '/pricing',
      n: '2',
    }),
    e('u1', '$pageview', '2026-01-01T09:10:00.000Z', { $browser: 'Firefox', $current_url: '/signup', n: 3 }),
    e('u1', 'signed up', '2026-01-01T10:00:00.000Z', { plan: 'pro' }, { group0: `acme${marker}` }),
    e(
      'u1',
      'purchase',
      '2026-01-02T12:00:00.000Z',
      { amount: 30, tags: ['a', 'b'] },
      { group0: `acme${marker}` },
    ),
    e('u2', '$pageview', '2026-01-01T11:00:00.000Z', { $browser: 'Safari', $current_url: '/home', n: null }),
    e('u2', '$pageview', '2026-01-01T11:01:00.000Z', { $browser: 'Safari', $current_url: '/docs' }),
    e('u2', 'signed up', '2026-01-03T11:00:00.000Z', { plan: 'free', note: 'it\'s "quoted" \\ é' }),
    e('u3', '$pageview', '2026-01-02T08:00:00.000Z', {
      $browser: 'Chrome',
      $current_url: '/home',
      $set: { plan: 'x' },
    }),
  ];
}

function generated(project: number, seed: number, marker: string): DatasetEvent[] {
  const random = mulberry32(seed);
  const out: DatasetEvent[] = [];
  for (let i = 0; i < 300; i++) {
    const user = `g${Math.floor(random() * 20)}${marker}`;
    const event = `${GENERATED_EVENTS[Math.floor(random() * GENERATED_EVENTS.length)]!}${marker}`;
    const day = 1 + Math.floor(random() * 10);
    const second = Math.floor(random() * 86400);
    const ts = new Date(Date.UTC(2026, 1, day) + second * 1000).toISOString();
    const properties: Record<string, unknown> = {
      $browser: BROWSERS[Math.floor(random() * BROWSERS.length)],
      generated: true,
    };
    if (event.startsWith('purchase')) properties['amount'] = Math.floor(random() * 100);
    if (marker) properties['secret'] = `${SECRET}-${project}`;
    out.push({
      project,
      uuid: uuid(),
      event,
      distinctId: user,
      personId: personOf(project, user),
      timestamp: ts,
      properties,
      personProperties: { email: `${user}@example.com` },
    });
  }
  return out;
}

function eventRow(e: DatasetEvent): Row {
  return {
    project_id: e.project,
    uuid: e.uuid,
    event: e.event,
    distinct_id: e.distinctId,
    person_id: e.personId,
    timestamp: chTime(e.timestamp),
    properties: JSON.stringify(e.properties),
    person_properties: JSON.stringify(e.personProperties),
    person_mode: 'full',
    $group_0: e.group0 ?? '',
    created_at: chTime(e.timestamp),
  };
}

/** Writes the dataset for `projects` (project 2, if listed, is the one marked SECRET) and returns it. */
export async function seedDataset(
  store: Pick<Store, 'insert'>,
  projects: readonly number[],
): Promise<Dataset> {
  const events: DatasetEvent[] = [];
  const retried = new Map<number, string>();
  for (const project of projects) {
    const marker = project === 2 ? `-${SECRET}` : '';
    const own = [...hand(project, marker), ...generated(project, 1000 + project, marker)];
    events.push(...own);
    await store.insert('events', own.map(eventRow));
    // The purchase again, as a retried request would store it: same uuid, a later _inserted_at.
    const purchase = own.find((e) => e.event.startsWith('purchase'))!;
    retried.set(project, purchase.uuid);
    await store.insert('events', [eventRow(purchase)]);

    const at = '2026-01-01 00:00:00.000';
    const person = (
      distinctId: string,
      properties: Record<string, unknown>,
      version: number,
      deleted = 0,
    ): Row => ({
      project_id: project,
      id: personOf(project, distinctId),
      properties: JSON.stringify(properties),
      is_identified: distinctId === 'u1' ? 1 : 0,
      created_at: at,
      version,
      is_deleted: deleted,
    });
    await store.insert('persons', [
      person('u1', { email: `u1@example.com${marker}`, plan: 'pro' }, 1),
      person('u1', { email: `u1@example.com${marker}`, plan: 'enterprise' }, 2),
      person('u2', { email: `u2@example.com${marker}`, plan: 'free' }, 1),
      person('u3', { email: `u3@example.com${marker}` }, 1),
      person('u3', { email: `u3@example.com${marker}` }, 2, 1),
    ]);
    await store.insert(
      'person_distinct_ids',
      ['u1', 'u2', 'u3'].map((d) => ({
        project_id: project,
        distinct_id: `${d}${marker}`,
        person_id: personOf(project, d),
        version: 1,
        is_deleted: d === 'u3' ? 1 : 0,
      })),
    );
    await store.insert('groups', [
      {
        project_id: project,
        group_type_index: 0,
        group_type: 'organization',
        group_key: `acme${marker}`,
        properties: JSON.stringify({ name: `Acme${marker}` }),
        created_at: at,
        version: 1,
      },
    ]);
    await store.insert('ingestion_warnings', [
      {
        project_id: project,
        type: `event_dropped${marker}`,
        source: 'capture',
        details: '{"reason":"x"}',
        timestamp: at,
      },
      {
        project_id: project,
        type: `event_dropped${marker}`,
        source: 'capture',
        details: '{"reason":"y"}',
        timestamp: at,
      },
    ]);
  }
  return { events, retriedUuid: (p) => retried.get(p)! };
}

/** Counts of `key(e)` over events, sorted by key. */
export function countBy<T extends string | number>(
  events: readonly DatasetEvent[],
  key: (e: DatasetEvent) => T,
): [T, number][] {
  const m = new Map<T, number>();
  for (const e of events) m.set(key(e), (m.get(key(e)) ?? 0) + 1);
  return [...m].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}
