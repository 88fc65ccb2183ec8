import type { PropertyType } from './property-types.ts';

/**
 * What the management API reads and changes of the property definitions ingest records (SPEC §3
 * `P/property_definitions/`): the port between the API and the process's definitions, which live with ingest.
 */

/** Whose property it is: an event's, or a person's (set by `$set` / `$set_once`). */
export type PropertyParent = 'event' | 'person';

export const PROPERTY_PARENTS: readonly PropertyParent[] = ['event', 'person'];

/** A property as ingest has seen it. */
export interface PropertyDefinition {
  readonly type: PropertyParent;
  readonly name: string;
  /** Null until a value with a type was seen (only nulls, lists or objects so far). */
  readonly propertyType: PropertyType | null;
  /** Event properties: the events it was seen with (up to a bound); person properties: none. */
  readonly events: readonly string[];
  /** ISO 8601, UTC. `lastSeenAt` is kept to the day (it is rewritten at most once a day). */
  readonly firstSeenAt: string;
  readonly lastSeenAt: string;
  /** When the type was last set through the API; null while it is the detected one. */
  readonly typeChangedAt: string | null;
}

export interface PropertyDefinitionFilter {
  readonly type?: PropertyParent;
  /** Names containing this, in any case. */
  readonly search?: string;
  readonly limit: number;
  readonly offset: number;
}

export interface PropertyCatalog {
  /** The project's definitions that pass the filter, by name, and how many pass it in all. */
  list(
    projectId: number,
    filter: PropertyDefinitionFilter,
  ): { readonly results: readonly PropertyDefinition[]; readonly count: number };
  get(projectId: number, type: PropertyParent, name: string): PropertyDefinition | undefined;
  /**
   * Gives a property the type from now on, whatever was detected; resolves once stored. Undefined when the
   * project has no such property.
   */
  setType(
    projectId: number,
    type: PropertyParent,
    name: string,
    propertyType: PropertyType,
  ): Promise<PropertyDefinition | undefined>;
}
