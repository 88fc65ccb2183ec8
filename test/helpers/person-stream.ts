/**
 * A stream of events in phases that exercises persons and groups the way many ingest processes can get them
 * wrong (issue 28): merges whose two distinct ids fall in different partitions, a person's properties set
 * through two of its ids at once, refused merges, and events of merged-away ids. Each phase is made of
 * operations on different persons, so its outcome does not depend on the order ingest takes them in: one
 * process gives one answer, and any number of processes must give the same. A test sends a phase, waits
 * until it is stored, then sends the next.
 *
 * `canonical` turns what a store holds into a form without person uuids (which are random), so two runs
 * compare with a deep equality.
 */
import { createHash } from 'node:crypto';

export interface StreamEvent {
  readonly event: string;
  readonly uuid: string;
  readonly timestamp: string;
  readonly distinct_id: string;
  readonly properties: Record<string, unknown>;
}

/** A uuid that is the same in every run, so the runs' events can be matched one to one. */
function fixedUuid(name: string): string {
  const h = createHash('sha256').update(name).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Builds the phases for `users` users (u_i, each with an anonymous id a_i before they log in). */
export function personStream(users: number): StreamEvent[][] {
  let n = 0;
  const base = Date.parse('2026-11-20T10:00:00Z');
  const ev = (event: string, distinctId: string, properties: Record<string, unknown> = {}): StreamEvent => {
    n++;
    return {
      event,
      uuid: fixedUuid(`person-stream:${n}`),
      // A second apart in stream order: the same timestamps in every run.
      timestamp: new Date(base + n * 1000).toISOString(),
      distinct_id: distinctId,
      properties,
    };
  };
  const half = Math.floor(users / 2);
  const threeQuarters = Math.floor((users * 3) / 4);
  const company = (i: number): string => `company-${i % 7}`;

  // Phase 1: every user and every anonymous visitor gets a person; groups are made.
  const p1: StreamEvent[] = [];
  for (let i = 0; i < users; i++) {
    p1.push(
      ev('$pageview', `u${i}`, {
        $set: { name: `user ${i}`, n: i },
        $set_once: { first_seen_as: 'user' },
        $groups: { company: company(i) },
      }),
    );
    p1.push(ev('$pageview', `a${i}`, { $set: { name: `anon ${i}`, anon: i }, $set_once: { landing: i } }));
  }
  for (let c = 0; c < 7; c++)
    p1.push(
      ev('$groupidentify', `u${c}`, { $group_type: 'company', $group_key: company(c), $group_set: { c } }),
    );

  // Phase 2: log-ins. Merges of two persons (identify, alias), an id joining a person, two new ids made one.
  const p2: StreamEvent[] = [];
  for (let i = 0; i < users; i++) {
    if (i < half) p2.push(ev('$identify', `u${i}`, { $anon_distinct_id: `a${i}`, $set: { plan: 'free' } }));
    else if (i < threeQuarters) p2.push(ev('$identify', `u${i}`, { $anon_distinct_id: `new${i}` }));
    else p2.push(ev('$create_alias', `u${i}`, { alias: `a${i}` }));
  }
  for (let i = 0; i < 5; i++) p2.push(ev('$identify', `m${i}`, { $anon_distinct_id: `mm${i}` }));

  // Phase 3: two ids of one person set properties at once; merges of two identified persons are refused;
  // groups are updated from two partitions.
  const p3: StreamEvent[] = [];
  for (let i = 0; i < half; i++) {
    p3.push(ev('$pageview', `a${i}`, { $set: { via_anon: i }, $set_once: { landing: -1 } }));
    p3.push(ev('$pageview', `u${i}`, { $set: { via_user: i }, $unset: ['anon'] }));
  }
  for (let i = half; i + 1 < threeQuarters; i += 2)
    p3.push(ev('$identify', `u${i}`, { $anon_distinct_id: `u${i + 1}` }));
  for (let c = 0; c < 7; c++) {
    p3.push(
      ev('$groupidentify', `a${c}`, {
        $group_type: 'company',
        $group_key: company(c),
        $group_set: { from_a: c },
      }),
    );
    p3.push(
      ev('$groupidentify', `u${c + 7}`, {
        $group_type: 'company',
        $group_key: company(c),
        $group_set: { from_u: c },
      }),
    );
  }

  // Phase 4: plain events of every id, merged-away ones included: each must name its person now.
  const p4: StreamEvent[] = [];
  for (let i = 0; i < users; i++) {
    p4.push(ev('$pageview', `a${i}`, { $groups: { company: company(i) } }));
    p4.push(ev('$pageview', `u${i}`));
    if (i >= half && i < threeQuarters) p4.push(ev('$pageview', `new${i}`));
  }
  for (let i = 0; i < 5; i++) p4.push(ev('$pageview', `mm${i}`));
  return [p1, p2, p3, p4];
}

/** What a store holds, as the SQL below reads it (one set of rows per query). */
export interface StoredState {
  readonly persons: readonly { id: string; properties: string; is_identified: number | string }[];
  readonly links: readonly { distinct_id: string; person_id: string }[];
  readonly events: readonly { uuid: string; distinct_id: string; person_id: string; g0: string }[];
  readonly groups: readonly { group_type_index: number | string; group_key: string; properties: string }[];
  readonly types: readonly { group_type: string; group_type_index: number | string }[];
  readonly warnings: readonly { type: string; n: number | string }[];
}

export const STATE_SQL: Record<keyof StoredState, string> = {
  persons: 'SELECT toString(id) AS id, properties, is_identified FROM persons FINAL WHERE is_deleted = 0',
  links:
    'SELECT distinct_id, toString(person_id) AS person_id FROM person_distinct_ids FINAL WHERE is_deleted = 0',
  events:
    'SELECT toString(uuid) AS uuid, distinct_id, toString(person_id) AS person_id, `$group_0` AS g0 FROM events',
  groups: 'SELECT group_type_index, group_key, properties FROM groups FINAL',
  types: 'SELECT group_type, group_type_index FROM group_type_mapping FINAL',
  warnings: 'SELECT type, count() AS n FROM ingestion_warnings GROUP BY type',
};

/**
 * The state without person uuids: a live person is named by its distinct ids; a person id on an event by the
 * distinct ids of the events that carry it (a merged-away person's events keep its id, in every run alike).
 */
export function canonical(s: StoredState): unknown {
  const idsOf = new Map<string, string[]>();
  for (const l of s.links) idsOf.set(l.person_id, [...(idsOf.get(l.person_id) ?? []), l.distinct_id]);
  const liveName = (id: string): string => (idsOf.get(id) ?? ['(none)']).sort().join(',');
  const eventIdsOf = new Map<string, Set<string>>();
  for (const e of s.events) {
    const set = eventIdsOf.get(e.person_id) ?? new Set<string>();
    set.add(e.distinct_id);
    eventIdsOf.set(e.person_id, set);
  }
  const eventName = (id: string): string => [...(eventIdsOf.get(id) ?? [])].sort().join(',');
  const sortedJson = (text: string): unknown => {
    const v = JSON.parse(text) as Record<string, unknown>;
    return Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)));
  };
  return {
    persons: s.persons
      .map((p) => ({
        ids: liveName(p.id),
        identified: Number(p.is_identified),
        properties: sortedJson(p.properties),
      }))
      .sort((a, b) => a.ids.localeCompare(b.ids)),
    links: s.links.map((l) => `${l.distinct_id}->${liveName(l.person_id)}`).sort(),
    events: s.events.map((e) => `${e.uuid}:${e.distinct_id}->${eventName(e.person_id)}|${e.g0}`).sort(),
    groups: s.groups
      .map((g) => `${g.group_type_index}:${g.group_key}=${JSON.stringify(sortedJson(g.properties))}`)
      .sort(),
    types: s.types.map((t) => `${t.group_type}=${t.group_type_index}`).sort(),
    warnings: s.warnings.map((w) => `${w.type}=${w.n}`).sort(),
  };
}
