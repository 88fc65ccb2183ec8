/**
 * The types of properties, as ingest detects them (PostHog's property definitions): the port between what
 * ingest records and what the query layer reads. `properties.x` of an event and `person.properties.x` are
 * typed by this; a property without a type reads as a String, as every property did before.
 */

export type PropertyType = 'Numeric' | 'String' | 'Boolean' | 'DateTime';

export const PROPERTY_TYPES: readonly PropertyType[] = ['Numeric', 'String', 'Boolean', 'DateTime'];

/** One project's property types at one moment. */
export interface PropertyTypes {
  event(name: string): PropertyType | undefined;
  person(name: string): PropertyType | undefined;
  /** Changes whenever a type of this project is added or changed: compiled queries are keyed by it. */
  readonly version: number;
}

export interface PropertyDefinitions {
  forProject(projectId: number): PropertyTypes;
}

/** Nothing typed, version 0: a project no property was seen in yet, or a process that records none. */
export const NO_PROPERTY_TYPES: PropertyTypes = Object.freeze({
  event: () => undefined,
  person: () => undefined,
  version: 0,
});
