import { MaterializedTableError, toWire } from './protocol.ts';
import type { ExecuteServing, FromActor, RunRequest, ToActor, WireError } from './protocol.ts';
import type { LoadedTable } from './parquet-table.ts';
import { TableCache } from './table-cache.ts';

type Run = RunRequest & { readonly id: number };

export interface QueryActorDeps {
  readonly post: (message: FromActor) => void;
  readonly execute: ExecuteServing;
  readonly load: (bytes: Uint8Array) => Promise<LoadedTable>;
}

/**
 * One query actor: the tables of its share of the materializations, and the runs over them. It lives in a
 * worker thread and takes one message at a time; a run over a table it holds is answered in the same turn.
 * A run over a table it does not hold waits while the pool reads the object (the actor asks once, however
 * many runs wait) and the actor decodes it; runs over other tables go on meanwhile.
 */
export class QueryActor {
  readonly #deps: QueryActorDeps;
  readonly #tables: TableCache<LoadedTable>;
  /** Runs waiting for their table, by table key; a key is here from the `need` until the table is in. */
  readonly #waiting = new Map<string, Run[]>();
  /** Tables forgotten while they were being read: served to their waiting runs, then not held. */
  readonly #forgotten = new Set<string>();
  #stats = emptyStats();
  #retired = false;

  constructor(config: { memoryBytes: number }, deps: QueryActorDeps) {
    this.#deps = deps;
    this.#tables = new TableCache(config.memoryBytes);
  }

  receive(message: ToActor): void {
    if (this.#retired) return;
    switch (message.type) {
      case 'run':
        this.#run(message);
        break;
      case 'table':
        void this.#loaded(message.tableKey, message.bytes);
        break;
      case 'table-failed':
        this.#failWaiting(message.tableKey, message.error);
        break;
      case 'forget':
        if (this.#tables.delete(message.tableKey)) this.#report();
        if (this.#waiting.has(message.tableKey)) this.#forgotten.add(message.tableKey);
        break;
    }
  }

  #run(run: Run): void {
    const loaded = this.#tables.get(run.tableKey);
    if (loaded) return this.#answer(run, loaded);
    const waiting = this.#waiting.get(run.tableKey);
    if (waiting) return void waiting.push(run);
    this.#waiting.set(run.tableKey, [run]);
    this.#deps.post({ type: 'need', tableKey: run.tableKey });
  }

  #answer(run: Run, loaded: LoadedTable): void {
    try {
      const answer = this.#deps.execute(loaded.table, run.plan, run.variables, run.page);
      this.#deps.post({ type: 'answer', id: run.id, answer });
    } catch (err) {
      this.#deps.post({ type: 'failed', id: run.id, error: toWire(err) });
    }
  }

  async #loaded(tableKey: string, bytes: Uint8Array): Promise<void> {
    const started = performance.now();
    let loaded: LoadedTable;
    try {
      loaded = await this.#deps.load(bytes);
    } catch (err) {
      this.#stats.loadFailures++;
      const reason = err instanceof Error ? err.message : String(err);
      const detail = `the materialization ${tableKey} could not be read as Parquet: ${reason}`;
      this.#failWaiting(tableKey, toWire(new MaterializedTableError('damaged', tableKey, detail)));
      this.#retire(detail);
      return;
    }
    this.#stats.loads++;
    this.#stats.loadSeconds.push((performance.now() - started) / 1000);
    const runs = this.#waiting.get(tableKey) ?? [];
    this.#waiting.delete(tableKey);
    if (!this.#forgotten.delete(tableKey)) {
      const { evicted, held } = this.#tables.set(tableKey, loaded, loaded.bytes);
      // A table larger than the actor's whole share is served once and dropped: counted as evicted.
      this.#stats.evictions += held ? evicted : 1;
    }
    // Figures first: whoever hears an answer then finds the metrics already counting its load.
    this.#report();
    for (const run of runs) this.#answer(run, loaded);
  }

  #failWaiting(tableKey: string, error: WireError): void {
    const runs = this.#waiting.get(tableKey) ?? [];
    this.#waiting.delete(tableKey);
    this.#forgotten.delete(tableKey);
    this.#report();
    for (const run of runs) this.#deps.post({ type: 'failed', id: run.id, error });
  }

  #retire(reason: string): void {
    this.#retired = true;
    this.#report();
    // The pool ends the thread when it reads this: everything posted before it has arrived by then.
    this.#deps.post({ type: 'retire', reason });
  }

  #report(): void {
    this.#deps.post({ type: 'stats', tables: this.#tables.size, bytes: this.#tables.bytes, ...this.#stats });
    this.#stats = emptyStats();
  }
}

function emptyStats(): { loads: number; loadFailures: number; evictions: number; loadSeconds: number[] } {
  return { loads: 0, loadFailures: 0, evictions: 0, loadSeconds: [] };
}
