import type { Logger } from '../core/logger.ts';
import type {
  PropertyCatalog,
  PropertyDefinition,
  PropertyDefinitionFilter,
  PropertyParent,
} from '../core/property-catalog.ts';
import type { PropertyDefinitions, PropertyType, PropertyTypes } from '../core/property-types.ts';
import type { Store } from '../core/ports.ts';
import { PropertyDefinitionRegistry } from '../ingest/property-definitions.ts';
import type { RemoteStore } from '../store/remote-store.ts';

/** How often a query node reads the definitions again: a new type reaches its queries within this. */
const RELOAD_MS = 1000;
const RETRY_MS = 1000;

/**
 * The property definitions as a `weir query` node has them: the store's, read every second (ingest records
 * them), through the owner's store API or straight from a ClickHouse server. A type set through this node's
 * API is applied by the owner when there is one (it holds the definitions of its ingest), else written to the
 * server store by this node; then read back at once so this node's next run uses it.
 */
export class RemotePropertyDefinitions implements PropertyDefinitions, PropertyCatalog {
  readonly #registry: PropertyDefinitionRegistry;
  readonly #owner: Pick<RemoteStore, 'setPropertyType'> | undefined;
  readonly #logger: Logger;
  #loaded = false;
  #closed = false;
  #timer: NodeJS.Timeout | undefined;

  /** `owner`: the store owner's store API, which applies a type set here (absent on a server store). */
  constructor(deps: {
    store: Pick<Store, 'query' | 'insert'>;
    owner?: Pick<RemoteStore, 'setPropertyType'>;
    logger: Logger;
  }) {
    this.#owner = deps.owner;
    this.#logger = deps.logger;
    this.#registry = new PropertyDefinitionRegistry({ reloadMs: RELOAD_MS }, deps);
  }

  /**
   * Starts reading; the first read is tried until it succeeds (the owner may start after this node), and
   * until then `loaded` is false: the node is not ready, since its queries would not type properties yet.
   */
  start(): void {
    const attempt = (): void => {
      this.#registry.start().then(
        () => {
          this.#loaded = true;
        },
        (err: unknown) => {
          if (this.#closed) return;
          this.#logger.warn({ err }, 'cannot read the property definitions from the store yet; retrying');
          this.#timer = setTimeout(attempt, RETRY_MS);
          this.#timer.unref();
        },
      );
    };
    attempt();
  }

  get loaded(): boolean {
    return this.#loaded;
  }

  forProject(projectId: number): PropertyTypes {
    return this.#registry.forProject(projectId);
  }

  list(
    projectId: number,
    filter: PropertyDefinitionFilter,
  ): { readonly results: readonly PropertyDefinition[]; readonly count: number } {
    return this.#registry.list(projectId, filter);
  }

  get(projectId: number, type: PropertyParent, name: string): PropertyDefinition | undefined {
    return this.#registry.get(projectId, type, name);
  }

  async setType(
    projectId: number,
    type: PropertyParent,
    name: string,
    propertyType: PropertyType,
  ): Promise<PropertyDefinition | undefined> {
    if (this.#owner === undefined) return this.#registry.setType(projectId, type, name, propertyType);
    const definition = await this.#owner.setPropertyType(projectId, type, name, propertyType);
    await this.#registry.reload();
    return definition;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    await this.#registry.close();
  }
}
