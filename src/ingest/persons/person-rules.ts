/**
 * The rules of person processing that need no state (SPEC §2 "Event semantics"): which distinct ids may
 * take part in a merge, which events ask for one, and how `$set` / `$set_once` / `$unset` change a person's
 * properties. They follow PostHog's ingestion so that SDKs behave the same against Weir.
 */

/**
 * Distinct ids that come from a bug in the caller (an unset variable, a placeholder) rather than from a
 * user. Merging on one of them would glue unrelated people together, so PostHog refuses it; so does Weir.
 * PostHog compares some of these case-sensitively (`NaN`, `null`, `0`, …); Weir compares all of them
 * without case, which refuses a few more spellings (`NULL`, `Nan`) that are just as surely bugs.
 */
const ILLEGAL_IDS = [
  'anonymous',
  'guest',
  'distinctid',
  'distinct_id',
  'id',
  'not_authenticated',
  'email',
  'undefined',
  'true',
  'false',
  '[object object]',
  'nan',
  'none',
  'null',
  '0',
];

/** Also refused when wrapped in quotes: SDKs have been seen sending `"null"` with the quotes in it. */
const ILLEGAL = new Set(ILLEGAL_IDS.flatMap((id) => [id, `'${id}'`, `"${id}"`]));

export function isIllegalDistinctId(id: string): boolean {
  const trimmed = id.trim();
  return trimmed === '' || ILLEGAL.has(trimmed.toLowerCase());
}

/** A request to make two distinct ids one person: `other`'s person is merged into `into`'s. */
export interface MergeRequest {
  /** The distinct id whose person goes away (`$anon_distinct_id`, or the alias). */
  readonly other: string;
  /** The event's distinct id, whose person is kept. */
  readonly into: string;
}

/**
 * The merge an event asks for, if any: `$identify` with `$anon_distinct_id`, `$create_alias` with `alias`.
 * An id merged with itself is no merge (posthog-node sends that when it only sets properties).
 */
export function mergeRequest(
  event: string,
  distinctId: string,
  properties: Record<string, unknown>,
): MergeRequest | undefined {
  let other: unknown;
  if (event === '$identify' && '$anon_distinct_id' in properties) other = properties['$anon_distinct_id'];
  else if (event === '$create_alias' && 'alias' in properties) other = properties['alias'];
  else return undefined;
  const otherId = asDistinctId(other);
  if (otherId === distinctId) return undefined;
  return { other: otherId, into: distinctId };
}

/** Longest distinct id capture keeps (SPEC §2); the id named in properties is cut the same way. */
const MAX_DISTINCT_ID_CHARS = 200;

/**
 * The other id as capture would have normalised it had it come as a `distinct_id`, so the anonymous id
 * named here matches the one its events were stored under. Non-strings become text as in PostHog
 * (`String(x)`, so a stray object becomes the illegal `[object Object]`).
 */
function asDistinctId(raw: unknown): string {
  let id = typeof raw === 'string' ? raw : String(raw);
  if (id.includes('\u0000')) id = id.replaceAll('\u0000', '\uFFFD');
  if (id.length > MAX_DISTINCT_ID_CHARS) {
    const chars = Array.from(id);
    if (chars.length > MAX_DISTINCT_ID_CHARS) id = chars.slice(0, MAX_DISTINCT_ID_CHARS).join('');
  }
  return id;
}

/** The distinct id of a merge request that is illegal, if either is. */
export function illegalIdOf(merge: MergeRequest): string | undefined {
  if (isIllegalDistinctId(merge.into)) return merge.into;
  if (isIllegalDistinctId(merge.other)) return merge.other;
  return undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The person's properties after the event's `$set_once` (only keys not yet set), `$set` (overwrite) and
 * `$unset` (a list of keys, or an object whose keys are removed), in PostHog's order. Returns the same
 * object when nothing changed, else a new one: the old object is never mutated, because events already
 * processed hold it as their `person_properties`.
 */
export function applyPropertyUpdates(
  current: Record<string, unknown>,
  properties: Record<string, unknown>,
): Record<string, unknown> {
  const set = properties['$set'];
  const setOnce = properties['$set_once'];
  const unsetRaw = properties['$unset'];
  // Most events change nothing about their person.
  if (set === undefined && setOnce === undefined && unsetRaw === undefined) return current;
  const unset = Array.isArray(unsetRaw)
    ? unsetRaw.filter((k): k is string => typeof k === 'string')
    : isObject(unsetRaw)
      ? Object.keys(unsetRaw)
      : [];
  let next: Record<string, unknown> | undefined;
  const write = (): Record<string, unknown> => (next ??= { ...current });
  if (isObject(setOnce)) {
    for (const [key, value] of Object.entries(setOnce))
      if (!Object.hasOwn(next ?? current, key)) write()[key] = value;
  }
  if (isObject(set)) {
    for (const [key, value] of Object.entries(set)) {
      const had = next ?? current;
      if (!Object.hasOwn(had, key) || !sameValue(had[key], value)) write()[key] = value;
    }
  }
  for (const key of unset) if (Object.hasOwn(next ?? current, key)) delete write()[key];
  return next ?? current;
}

/** JSON equality: property values arrive as JSON, so their text is their identity. */
function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}
