import type { PropertyParent } from '../core/property-catalog.ts';
import type { PropertyType } from '../core/property-types.ts';
import type { Row, Store } from '../core/ports.ts';
import { chTime } from '../store/ch-time.ts';
import type { DefinitionState } from './property-definition-merge.ts';

/** Which definition a row is, and what it holds. */
export interface DefinitionKey {
  readonly projectId: number;
  readonly type: PropertyParent;
  readonly name: string;
}

/** A row of `property_definitions` as read: its definition, its state and its version. */
export interface StoredDefinition extends DefinitionKey {
  readonly state: DefinitionState;
  readonly version: number;
}

interface StoredRow {
  project_id: string;
  type: string;
  name: string;
  property_type: string;
  events: string[];
  first_seen_at: string;
  last_seen_at: string;
  type_changed_at: string | null;
  version: string;
}

/** The columns of a stored definition as `StoredRow` reads them. */
const STORED_COLUMNS = `toString(project_id) AS project_id, type, name, property_type, events,
  toString(toUnixTimestamp64Milli(first_seen_at)) AS first_seen_at,
  toString(toUnixTimestamp64Milli(last_seen_at)) AS last_seen_at,
  toString(toUnixTimestamp64Milli(type_changed_at)) AS type_changed_at, toString(version) AS version`;

/**
 * The `property_definitions` table as the registry reads and writes it: kept apart from the registry so that
 * the registry is about what ingest sees and how definitions merge, and this about rows and SQL. A row is
 * replaced by one of a higher version (ReplacingMergeTree); reads are FINAL.
 */
export class PropertyDefinitionRows {
  readonly #store: Pick<Store, 'query' | 'insert'>;

  constructor(store: Pick<Store, 'query' | 'insert'>) {
    this.#store = store;
  }

  /** Up to `limit` definitions, and the highest version any row has (0 with none). */
  async readAll(limit: number): Promise<{ rows: StoredDefinition[]; maxVersion: number }> {
    const [rows, [max]] = await Promise.all([
      this.#store.query<StoredRow>(
        `SELECT ${STORED_COLUMNS} FROM property_definitions FINAL
         ORDER BY project_id, type, name
         LIMIT {limit:UInt64}`,
        { limit },
      ),
      this.#store.query<{ version: string }>(
        'SELECT toString(max(version)) AS version FROM property_definitions',
      ),
    ]);
    return { rows: rows.map(stored), maxVersion: Number(max?.version ?? 0) };
  }

  /** The stored rows of these definitions (by project and name: a few more may come, of the other parent). */
  async read(keys: readonly DefinitionKey[]): Promise<StoredDefinition[]> {
    const rows = await this.#store.query<StoredRow>(
      `SELECT ${STORED_COLUMNS} FROM property_definitions FINAL
       WHERE project_id IN {projects:Array(UInt64)} AND name IN {names:Array(String)}`,
      {
        projects: [...new Set(keys.map((d) => d.projectId))],
        names: [...new Set(keys.map((d) => d.name))],
      },
    );
    return rows.map(stored);
  }

  /** Writes each definition as a row of its version. */
  async write(
    definitions: readonly (DefinitionKey & DefinitionState & { version: number })[],
  ): Promise<void> {
    await this.#store.insert('property_definitions', definitions.map(row));
  }
}

function row(d: DefinitionKey & DefinitionState & { version: number }): Row {
  return {
    project_id: d.projectId,
    type: d.type,
    name: d.name,
    property_type: d.propertyType ?? '',
    events: d.events,
    first_seen_at: chTime(d.firstSeenAt),
    last_seen_at: chTime(d.lastSeenAt),
    type_changed_at: d.typeChangedAt === null ? null : chTime(d.typeChangedAt),
    version: d.version,
  };
}

function stored(r: StoredRow): StoredDefinition {
  return {
    projectId: Number(r.project_id),
    type: r.type === 'person' ? 'person' : 'event',
    name: r.name,
    version: Number(r.version),
    state: {
      propertyType: (r.property_type || null) as PropertyType | null,
      events: r.events,
      firstSeenAt: Number(r.first_seen_at),
      lastSeenAt: Number(r.last_seen_at),
      typeChangedAt: r.type_changed_at === null ? null : Number(r.type_changed_at),
    },
  };
}
