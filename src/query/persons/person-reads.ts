import type { TableReader } from '../../core/ports.ts';
import { parseJsonObject } from '../../core/json-object.ts';
import { AppError } from '../../errors/app-error.ts';
import { quoteName } from '../dialect/print-dialect.ts';

/**
 * The persons API's reads (SPEC §3, PostHog's `GET …/persons/`): persons of one project as the store holds
 * them now — the newest row of each (`FINAL`), deleted ones left out — with every distinct id that points at
 * them. Values reach the engine as typed parameters, never as SQL text.
 */

/** A person as the API shows it (PostHog's shape, but `id` is the uuid: Weir has no integer ids). */
export interface PersonView {
  readonly id: string;
  readonly uuid: string;
  /** PostHog's display name: the `email` property, else `name`, else the first distinct id. */
  readonly name: string;
  readonly distinct_ids: readonly string[];
  readonly properties: Record<string, unknown>;
  readonly is_identified: boolean;
  readonly created_at: string;
}

/** A condition on a person property, as PostHog's `properties` parameter gives one. */
export interface PersonPropertyFilter {
  readonly key: string;
  readonly operator: 'exact' | 'is_not' | 'icontains' | 'not_icontains' | 'is_set' | 'is_not_set';
  /** The values compared with (`exact` / `is_not` take several); none for `is_set` / `is_not_set`. */
  readonly values: readonly string[];
}

export const PERSON_FILTER_OPERATORS: readonly PersonPropertyFilter['operator'][] = [
  'exact',
  'is_not',
  'icontains',
  'not_icontains',
  'is_set',
  'is_not_set',
];

export interface PersonListFilter {
  /** Only the person this distinct id points at. */
  readonly distinctId?: string;
  /** Only persons whose `email` property is this. */
  readonly email?: string;
  /** PostHog's search: `email` or `name` containing it (any case), or a distinct id or uuid equal to it. */
  readonly search?: string;
  readonly properties?: readonly PersonPropertyFilter[];
  readonly limit: number;
  readonly offset: number;
}

export interface PersonReadDeps {
  readonly reader: TableReader;
  /** The database the tables are in (`default` on the embedded store). */
  readonly database: string;
}

/** One page of a project's persons, newest first, and whether there are more after it. */
export async function listPersons(
  deps: PersonReadDeps,
  projectId: number,
  filter: PersonListFilter,
): Promise<{ persons: PersonView[]; more: boolean }> {
  const params: Record<string, unknown> = { project: projectId };
  const where = [...personConditions(deps.database, filter, params)];
  params['limit'] = filter.limit + 1;
  params['offset'] = filter.offset;
  const rows = await personRows(deps, where, params, 'LIMIT {limit:UInt64} OFFSET {offset:UInt64}');
  const more = rows.length > filter.limit;
  return { persons: await withDistinctIds(deps, projectId, rows.slice(0, filter.limit)), more };
}

/** One person by uuid, or undefined when the project has no such (live) person. */
export async function getPerson(
  deps: PersonReadDeps,
  projectId: number,
  uuid: string,
): Promise<PersonView | undefined> {
  const rows = await personRows(deps, ['p.id = {person:UUID}'], { project: projectId, person: uuid }, '');
  return (await withDistinctIds(deps, projectId, rows))[0];
}

interface PersonRow {
  readonly id: string;
  readonly properties: Record<string, unknown>;
  readonly isIdentified: boolean;
  readonly createdAt: string;
}

async function personRows(
  deps: PersonReadDeps,
  conditions: readonly string[],
  params: Record<string, unknown>,
  page: string,
): Promise<PersonRow[]> {
  const db = quoteName(deps.database);
  // The live row of each person first (FINAL, then is_deleted), and the filters after: a filter on a
  // property must see the newest properties, not an older row's.
  const table = await deps.reader.queryTable(
    // Aliases unlike the columns' names: ClickHouse would read an alias in WHERE and ORDER BY in their place.
    `SELECT toString(p.id) AS uuid, p.properties AS props, p.is_identified AS identified,
            toUnixTimestamp64Milli(p.created_at) AS created_ms
     FROM (SELECT id, properties, is_identified, created_at, is_deleted
           FROM ${db}.persons FINAL WHERE project_id = {project:UInt64}) AS p
     WHERE p.is_deleted = 0${conditions.map((c) => ` AND (${c})`).join('')}
     ORDER BY p.created_at DESC, p.id DESC ${page}`,
    params,
    { project: Number(params['project']), kind: 'adhoc' },
  );
  return table.rows.map(([id, properties, identified, createdAt]) => ({
    id: String(id),
    properties: parseJsonObject(String(properties)),
    isIdentified: Number(identified) === 1,
    createdAt: new Date(Number(createdAt)).toISOString(),
  }));
}

async function withDistinctIds(
  deps: PersonReadDeps,
  projectId: number,
  rows: readonly PersonRow[],
): Promise<PersonView[]> {
  const ids = await linksOf(
    deps,
    projectId,
    rows.map((r) => r.id),
  );
  return rows.map((r) => {
    const distinctIds = ids.get(r.id) ?? [];
    return {
      id: r.id,
      uuid: r.id,
      name: displayName(r.properties, distinctIds),
      distinct_ids: distinctIds,
      properties: r.properties,
      is_identified: r.isIdentified,
      created_at: r.createdAt,
    };
  });
}

/** The distinct ids that point at each of these persons now, in order. */
async function linksOf(
  deps: PersonReadDeps,
  projectId: number,
  personIds: readonly string[],
): Promise<Map<string, string[]>> {
  const ids = new Map<string, string[]>();
  if (personIds.length === 0) return ids;
  const table = await deps.reader.queryTable(
    `SELECT toString(person_id) AS person, distinct_id
     FROM ${quoteName(deps.database)}.person_distinct_ids FINAL
     WHERE project_id = {project:UInt64} AND person_id IN {persons:Array(UUID)} AND is_deleted = 0
     ORDER BY distinct_id`,
    { project: projectId, persons: personIds },
    { project: projectId, kind: 'adhoc' },
  );
  for (const [person, distinctId] of table.rows) {
    const list = ids.get(String(person));
    if (list) list.push(String(distinctId));
    else ids.set(String(person), [String(distinctId)]);
  }
  return ids;
}

/** The filter's conditions on `p` (the live persons), their values added to `params`. */
function* personConditions(
  database: string,
  filter: PersonListFilter,
  params: Record<string, unknown>,
): Generator<string> {
  const linked = (condition: string): string =>
    `p.id IN (SELECT person_id FROM ${quoteName(database)}.person_distinct_ids FINAL
              WHERE project_id = {project:UInt64} AND is_deleted = 0 AND ${condition})`;
  if (filter.distinctId !== undefined) {
    params['distinct_id'] = filter.distinctId;
    yield linked('distinct_id = {distinct_id:String}');
  }
  if (filter.email !== undefined) {
    params['email'] = filter.email;
    yield `${propertyText('email')} = {email:String}`;
  }
  if (filter.search !== undefined && filter.search !== '') {
    params['search'] = filter.search;
    yield [
      `positionCaseInsensitiveUTF8(${propertyText('email')}, {search:String}) > 0`,
      `positionCaseInsensitiveUTF8(${propertyText('name')}, {search:String}) > 0`,
      'toString(p.id) = {search:String}',
      linked('distinct_id = {search:String}'),
    ].join(' OR ');
  }
  for (const [i, f] of (filter.properties ?? []).entries()) {
    params[`k${i}`] = f.key;
    const value = `if(JSONType(p.properties, {k${i}:String}) = 'String', JSONExtractString(p.properties, {k${i}:String}), JSONExtractRaw(p.properties, {k${i}:String}))`;
    const set = `JSONHas(p.properties, {k${i}:String}) AND JSONType(p.properties, {k${i}:String}) != 'Null'`;
    if (f.operator === 'is_set') yield set;
    else if (f.operator === 'is_not_set') yield `NOT (${set})`;
    else if (f.operator === 'exact' || f.operator === 'is_not') {
      params[`v${i}`] = f.values;
      yield `${f.operator === 'is_not' ? 'NOT ' : ''}(${set} AND ${value} IN {v${i}:Array(String)})`;
    } else {
      params[`v${i}`] = f.values[0] ?? '';
      const contains = `${set} AND positionCaseInsensitiveUTF8(${value}, {v${i}:String}) > 0`;
      yield f.operator === 'icontains' ? contains : `NOT (${contains})`;
    }
  }
}

function propertyText(key: 'email' | 'name'): string {
  return `JSONExtractString(p.properties, '${key}')`;
}

function displayName(properties: Record<string, unknown>, distinctIds: readonly string[]): string {
  for (const key of ['email', 'name']) {
    const v = properties[key];
    if (typeof v === 'string' && v !== '') return v;
  }
  return distinctIds[0] ?? '';
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether a value is a person uuid as the API takes one (any case). */
export function isPersonUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID.test(value);
}

/** A person uuid as the path gives it, or a 404: no other id reaches a person. */
export function personUuid(raw: string): string {
  const uuid = raw.toLowerCase();
  if (!isPersonUuid(uuid)) {
    throw new AppError('not_found', { detail: 'A person is named by its uuid.', attr: 'id' });
  }
  return uuid;
}

/** Every distinct id that points at one of these persons now (what a suppression of them must cover). */
export async function distinctIdsOfPersons(
  deps: PersonReadDeps,
  projectId: number,
  personIds: readonly string[],
): Promise<string[]> {
  return [...(await linksOf(deps, projectId, personIds)).values()].flat();
}
