import type { Row, Store } from '../../core/ports.ts';
import { parseJsonObject } from '../../core/json-object.ts';
import { chTime } from '../../store/ch-time.ts';
import type { Person } from './person-cache.ts';
import { STATE_READ } from './state-writes.ts';

/** A person as the store holds it. */
export interface StoredPerson {
  readonly id: string;
  readonly properties: Record<string, unknown>;
  readonly isIdentified: boolean;
  readonly createdAt: number;
  readonly version: number;
}

interface PersonQueryRow {
  person_id: string;
  properties: string;
  is_identified: number;
  created_at: string;
  version: string;
  is_deleted: number;
}

/**
 * Reads persons back from the store (DESIGN "Store schema"): the tables are ReplacingMergeTrees written
 * by this process, so `FINAL` gives the latest row of each key. Writes go through the batch writer as the
 * rows built below.
 */
export class PersonRepository {
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  /**
   * Every `project:distinct_id` key that has (or had) a person, a page at a time in key order: for
   * KnownIds. Pages are read by primary key, each a short statement, so the store's other work is not held
   * up for long behind them.
   */
  async *distinctIdKeys(pageSize = 20_000): AsyncGenerator<string[]> {
    const projects = await this.#store.query<{ project_id: string }>(
      'SELECT DISTINCT project_id FROM person_distinct_ids ORDER BY project_id',
      {},
      STATE_READ,
    );
    for (const { project_id: project } of projects) {
      let after = '';
      for (;;) {
        const rows = await this.#store.query<{ distinct_id: string }>(
          `SELECT DISTINCT distinct_id FROM person_distinct_ids
           WHERE project_id = {project:UInt64} AND distinct_id > {after:String}
           ORDER BY distinct_id LIMIT {limit:UInt64}`,
          { project, after, limit: pageSize },
          STATE_READ,
        );
        if (rows.length > 0) yield rows.map((r) => `${project}:${r.distinct_id}`);
        if (rows.length < pageSize) break;
        after = rows.at(-1)!.distinct_id;
      }
    }
  }

  /**
   * The persons of `project:distinct_id` keys, keyed the same way; a key with no person is absent. Two
   * lookups by primary key rather than one join: most misses are ids never seen, which the first, cheap
   * query settles alone. Projects and ids are matched as two lists and the pairs nobody asked for are
   * left out here.
   */
  async byDistinctIds(keys: readonly string[]): Promise<Map<string, StoredPerson>> {
    const projects = new Set<number>();
    const ids = new Set<string>();
    for (const key of keys) {
      const sep = key.indexOf(':');
      projects.add(Number(key.slice(0, sep)));
      ids.add(key.slice(sep + 1));
    }
    const links = await this.#store.query<{ project_id: string; distinct_id: string; person_id: string }>(
      `SELECT project_id, distinct_id, toString(person_id) AS person_id FROM person_distinct_ids FINAL
       WHERE project_id IN {projects:Array(UInt64)} AND distinct_id IN {ids:Array(String)} AND is_deleted = 0`,
      { projects: [...projects], ids: [...ids] },
      STATE_READ,
    );
    const wanted = new Set(keys);
    const personOf = new Map<string, string>();
    for (const l of links) {
      const key = `${l.project_id}:${l.distinct_id}`;
      if (wanted.has(key)) personOf.set(key, l.person_id);
    }
    const found = new Map<string, StoredPerson>();
    if (personOf.size === 0) return found;
    const rows = await this.#store.query<PersonQueryRow>(
      `SELECT toString(id) AS person_id, properties, is_identified, toUnixTimestamp64Milli(created_at) AS created_at,
              version, is_deleted
       FROM persons FINAL WHERE project_id IN {projects:Array(UInt64)} AND id IN {persons:Array(UUID)}`,
      { projects: [...projects], persons: [...new Set(personOf.values())] },
      STATE_READ,
    );
    const persons = new Map(rows.map((r) => [r.person_id, r]));
    for (const [key, personId] of personOf) {
      const r = persons.get(personId);
      // A link to a person with no live row (its write failed, or it was merged away) is no person.
      if (!r || Number(r.is_deleted) === 1) continue;
      found.set(key, {
        id: r.person_id,
        properties: parseJsonObject(r.properties),
        isIdentified: Number(r.is_identified) === 1,
        createdAt: Number(r.created_at),
        version: Number(r.version),
      });
    }
    return found;
  }

  /** Every distinct id the store points at a person (needed to move them all when it is merged away). */
  async distinctIdsOf(projectId: number, personId: string): Promise<string[]> {
    const rows = await this.#store.query<{ distinct_id: string }>(
      `SELECT distinct_id FROM person_distinct_ids FINAL
       WHERE project_id = {project:UInt64} AND person_id = {person:UUID} AND is_deleted = 0`,
      { project: projectId, person: personId },
      STATE_READ,
    );
    return rows.map((r) => r.distinct_id);
  }
}

/** The `persons` row of a person's current state. */
export function personRow(p: Person): Row {
  return {
    project_id: p.projectId,
    id: p.id,
    properties: JSON.stringify(p.properties),
    is_identified: p.isIdentified ? 1 : 0,
    created_at: chTime(p.createdAt),
    version: p.version,
    is_deleted: p.deleted ? 1 : 0,
  };
}

/** The `person_distinct_ids` row pointing a distinct id at a person. */
export function distinctIdRow(p: Person, distinctId: string): Row {
  return {
    project_id: p.projectId,
    distinct_id: distinctId,
    person_id: p.id,
    // The person's version only grows, and a merge gives the surviving person a version above both,
    // so a distinct id moved by a merge always gets a row newer than the one it had.
    version: p.version,
    is_deleted: 0,
  };
}
