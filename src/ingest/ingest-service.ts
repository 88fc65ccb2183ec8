import { Actor, KeyedActors } from '../core/actor.ts';
import type { BatchOrigin, EventBatch, Lane } from '../core/event.ts';
import type { Logger } from '../core/logger.ts';
import type { Metrics } from '../core/metrics.ts';
import { partitionOf } from '../core/partition.ts';
import type { Store } from '../core/ports.ts';
import { BatchWriter } from './batch-writer.ts';
import { DedupWindow } from './dedup-window.ts';
import { EVENT_COLUMNS, eventValues, warningRow } from './event-row.ts';
import { HandOffOrder, withoutStored } from './stored-events.ts';
import { Pipeline, type PipelineOutput } from './pipeline.ts';
import { GroupState, groupKeys } from './persons/group-state.ts';
import { KnownIds } from './persons/known-ids.ts';
import { PersonRepository } from './persons/person-repository.ts';
import { PersonState } from './persons/person-state.ts';
import type { Groups, Persons } from './persons/persons.ts';
import type { SharedStateSource } from './shared/shared-state.ts';
import { allCommitted } from './persons/state-writes.ts';
import { assignPersonMode } from './steps/assign-person.ts';
import { identifyGroup } from './steps/identify-group.ts';
import { linkGroups } from './steps/link-groups.ts';
import { processPerson } from './steps/process-person.ts';
import { refusePersonlessIdentify } from './steps/refuse-personless-identify.ts';
import type { CapturedEvent } from '../core/event.ts';
import type { PipelineEvent } from '../core/step.ts';
import { asError } from '../errors/app-error.ts';

export interface IngestConfig {
  readonly ingestPartitions: number;
  readonly commitMaxRows: number;
  readonly dedupWindow: number;
  /** Distinct ids whose person is kept in memory. @default 100000 */
  readonly personCacheSize?: number;
  /** Groups kept in memory. @default 10000 */
  readonly groupCacheSize?: number;
}

export interface IngestDeps {
  readonly store: Store;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Records the property definitions of what is stored (property-definitions.ts); none when absent. */
  readonly properties?: { observe(events: readonly PipelineEvent[]): void };
  /**
   * Person and group state shared with other ingest processes (NATS KV, ingest/shared/): given when the store
   * has other writers. Without it the state is this process's own, as one process needs.
   */
  readonly sharedState?: SharedStateSource;
  /**
   * Whether a project still exists (the catalog's): events of a deleted one still on their way (a bus's
   * backlog) are dropped, counted, rather than stored after its data was erased. Every project when absent.
   */
  readonly projectExists?: (projectId: number) => boolean;
}

interface Job {
  readonly lane: Lane;
  readonly events: readonly CapturedEvent[];
  readonly commits: Promise<void>[];
  /**
   * Set on a job that only holds its partition until this settles (no events): the partition's share of
   * a turn's batch that went on to wait for the store.
   */
  readonly barrier?: Promise<void>;
}

/**
 * Resolves when every job has been processed and every commit they added has settled. A function of its own
 * so that `handle`'s batch is not kept alive by an async frame while the commits wait for the disk.
 */
async function settled(sends: Promise<void>[], commits: Promise<void>[]): Promise<void> {
  await Promise.all(sends);
  await Promise.all(commits);
}

/**
 * `commit`, marked as handled: a commit can fail while `settled` still waits for the jobs, before it looks at
 * the commits, and a rejection nobody has a handler for yet would end the process. `settled` still sees it.
 */
function watched(commit: Promise<void>): Promise<void> {
  commit.catch(() => undefined);
  return commit;
}

/**
 * Ingest: runs captured events through the pipeline in keyed actors and hands the rows to the group-commit
 * writer. Live events are keyed by partition of (project, distinct_id), so one person's events keep their
 * order; overflow events spread over their own actors with no ordering promise (a hot key must not hold up a
 * live partition); historical events go through one actor in arrival order. `handle` resolves when every
 * event of the batch is committed.
 */
export class IngestService {
  readonly #deps: IngestDeps;
  readonly #writer: BatchWriter;
  readonly #dedup: DedupWindow;
  readonly #pipeline: Pipeline;
  readonly #live: KeyedActors<Job>;
  readonly #overflow: KeyedActors<Job>;
  readonly #historical: Actor<Job>;
  readonly #partitions: number;
  readonly #knownIds: KnownIds | undefined;
  readonly #knownGroups: KnownIds | undefined;
  readonly #groups: Groups;
  readonly #persons: Persons;
  readonly #handOffs = new HandOffOrder();

  constructor(config: IngestConfig, deps: IngestDeps) {
    this.#deps = deps;
    this.#partitions = config.ingestPartitions;
    this.#writer = new BatchWriter({ maxRows: config.commitMaxRows }, deps);
    this.#dedup = new DedupWindow(config.dedupWindow);
    const state = { store: deps.store, writer: this.#writer };
    // Only a store's sole writer can know every distinct id that has a person, and every group (see KnownIds).
    // Shared state means other processes write persons too, whatever the store.
    const sole = deps.store.soleWriter && !deps.sharedState;
    this.#knownIds = sole ? new KnownIds() : undefined;
    this.#knownGroups = sole ? new KnownIds() : undefined;
    const personCache = { cacheSize: config.personCacheSize ?? 100_000 };
    const groupCache = { cacheSize: config.groupCacheSize ?? 10_000 };
    const shared = deps.sharedState;
    const persons = shared
      ? shared.persons(personCache, { writer: this.#writer, metrics: deps.metrics })
      : new PersonState(personCache, { ...state, knownIds: this.#knownIds, metrics: deps.metrics });
    this.#persons = persons;
    this.#groups = shared
      ? shared.groups(groupCache, { writer: this.#writer, metrics: deps.metrics })
      : new GroupState(groupCache, { ...state, knownKeys: this.#knownGroups });
    // The one place the order of the steps is written down.
    this.#pipeline = new Pipeline([
      assignPersonMode(),
      refusePersonlessIdentify(),
      processPerson(persons),
      identifyGroup(this.#groups),
      linkGroups(this.#groups),
    ]);
    const handler = (job: Job): Promise<void> | void => this.#process(job);
    this.#live = new KeyedActors(config.ingestPartitions, () => handler);
    this.#overflow = new KeyedActors(Math.max(1, Math.ceil(config.ingestPartitions / 4)), () => handler);
    this.#historical = new Actor(handler);
  }

  /**
   * Starts reading which distinct ids have a person and which groups are stored (in the background: until
   * that is done, every new id or group is looked up, as without it), and warms the duplicate window with
   * what was stored in the last hour, so retries after a restart are caught.
   */
  async start(limit: number): Promise<void> {
    void this.#loadKnownIds();
    if (limit === 0) return;
    const rows = await this.#deps.store.query<{ project_id: string; uuid: string }>(
      `SELECT project_id, toString(uuid) AS uuid FROM events
       WHERE _inserted_at > now64(6) - INTERVAL 1 HOUR ORDER BY _inserted_at DESC LIMIT {limit:UInt64}`,
      { limit },
    );
    for (let i = rows.length - 1; i >= 0; i--)
      this.#dedup.remember({ projectId: Number(rows[i]!.project_id), uuid: rows[i]!.uuid });
    this.#deps.logger.info({ uuids: rows.length }, 'duplicate window warmed from the store');
  }

  /** What the store's sole writer reads at start: group types first (one short statement), then the filters. */
  async #loadKnownIds(): Promise<void> {
    if (!this.#knownIds || !this.#knownGroups) return;
    try {
      await this.#groups.preloadTypes();
    } catch (err) {
      this.#deps.logger.warn({ err }, "could not read the projects' group types; each is read on first use");
    }
    await this.#loadKnown(
      this.#knownIds,
      new PersonRepository(this.#deps.store).distinctIdKeys(),
      'distinct ids',
      'new ids',
    );
    await this.#loadKnown(this.#knownGroups, groupKeys(this.#deps.store), 'groups', 'new groups');
  }

  async #loadKnown(
    known: KnownIds,
    pages: AsyncIterable<readonly string[]>,
    what: string,
    news: string,
  ): Promise<void> {
    const started = performance.now();
    try {
      await known.load(pages);
      this.#deps.logger.info(
        { keys: known.size, ms: Math.round(performance.now() - started) },
        `known ${what} read: ${news} are no longer looked up`,
      );
    } catch (err) {
      // Stopped with the store, most likely. Without the filter every new key is looked up: slower, not wrong.
      this.#deps.logger.warn({ err }, `could not read the known ${what}; ${news} are looked up`);
    }
  }

  accepting(): boolean {
    return this.#deps.store.accepting();
  }

  /**
   * Takes a batch; resolves when its events are committed. One that `maybeStored` is first looked up in the
   * store, and the events it holds are dropped (a batch a process stored and died before acknowledging, given
   * again to this one: its duplicate window has never seen them); batches given meanwhile wait their turn, so
   * the order of the calls is still the order in which ingest takes them.
   */
  handle(batch: EventBatch, origin?: BatchOrigin): Promise<void> {
    if (origin?.maybeStored !== true && !this.#handOffs.busy) return this.#take(batch);
    const ready =
      origin?.maybeStored === true
        ? withoutStored(this.#deps.store, batch).then(({ batch: rest, dropped }) => {
            if (dropped > 0) this.#deps.metrics.ingestDuplicates.inc(dropped);
            return rest;
          })
        : batch;
    return this.#handOffs.after(ready, (b) => this.#take(b));
  }

  #take(batch: EventBatch): Promise<void> {
    try {
      return this.#handle(batch);
    } catch (err) {
      return Promise.reject(asError(err));
    }
  }

  /**
   * `handle`, synchronous up to the wait: nothing here keeps the batch alive while its commits settle.
   *
   * A live or overflow batch is split by partition. The partitions whose actor is idle and whose events
   * the pipeline can take without the store (`Pipeline.ready`: persons cached or certainly new, no merge,
   * no group work) — most of them, under load — are processed here and now as one job: one duplicate
   * claim, one pipeline run and one write for all of them, rather than a job each. The rest go to their
   * actors, so an event that must wait for the store holds up only its own partition. Should the joint job
   * wait after all (a cached person evicted meanwhile), its partitions are held until it is done, so their
   * later events still come after it.
   */
  #handle(given: EventBatch): Promise<void> {
    const batch = this.#ofLiveProjects(given);
    const commits: Promise<void>[] = [];
    if (batch.warnings.length > 0)
      commits.push(watched(this.#writer.write('ingestion_warnings', batch.warnings.map(warningRow))));
    const sends: Promise<void>[] = [];
    if (batch.events.length > 0) {
      if (batch.lane === 'historical') {
        sends.push(this.#historical.send({ lane: 'historical', events: batch.events, commits }));
      } else {
        const lane = batch.lane;
        const actors = lane === 'live' ? this.#live : this.#overflow;
        const groups = new Map<number, CapturedEvent[]>();
        for (const e of batch.events) {
          const key =
            lane === 'live'
              ? partitionOf(e.projectId, e.distinctId, this.#partitions)
              : partitionOf(e.projectId, e.uuid, actors.size);
          const g = groups.get(key);
          if (g) g.push(e);
          else groups.set(key, [e]);
        }
        let now: CapturedEvent[] | undefined;
        const held: number[] = [];
        for (const [key, events] of groups) {
          if (actors.isIdle(key) && this.#pipeline.ready(events)) {
            if (now) for (const e of events) now.push(e);
            else now = events;
            held.push(key);
          } else sends.push(actors.send(key, { lane, events, commits }));
        }
        if (now) {
          try {
            const done = this.#process({ lane, events: now, commits });
            if (done) {
              sends.push(done);
              for (const key of held)
                sends.push(actors.send(key, { lane, events: [], commits, barrier: done }));
            }
          } catch (err) {
            sends.push(Promise.reject(asError(err)));
          }
        }
      }
    }
    return settled(sends, commits);
  }

  /** The batch without what belongs to deleted projects (the same batch when nothing does). */
  #ofLiveProjects(batch: EventBatch): EventBatch {
    const exists = this.#deps.projectExists;
    if (!exists) return batch;
    let last = -1;
    let gone = false;
    for (const e of batch.events) {
      if (e.projectId === last) continue;
      if (!exists(e.projectId)) gone = true;
      last = e.projectId;
    }
    for (const w of batch.warnings) if (!exists(w.projectId)) gone = true;
    if (!gone) return batch;
    const events = batch.events.filter((e) => exists(e.projectId));
    this.#deps.metrics.ingestDroppedDeleted.inc(batch.events.length - events.length);
    return { ...batch, events, warnings: batch.warnings.filter((w) => exists(w.projectId)) };
  }

  /**
   * Forgets persons an erasure deletes (Persons.forget), then waits until every row written so far is
   * committed and visible, so that a delete run after it meets every row of theirs.
   */
  async forgetPersons(
    projectId: number,
    personIds: readonly string[],
    distinctIds: readonly string[],
  ): Promise<void> {
    await this.#persons.forget(projectId, personIds, distinctIds);
    await this.#writer.writtenSoFar();
    await this.#writer.visible();
  }

  /** Waits until everything handed in so far is processed and committed. */
  async drain(): Promise<void> {
    await Promise.all([this.#live.idle(), this.#overflow.idle(), this.#historical.idle()]);
    await this.#writer.flushed();
  }

  /** Runs a job's events through the pipeline and writes their rows; synchronous unless a step waits. */
  #process(job: Job): Promise<void> | void {
    if (job.barrier) return job.barrier;
    let settle!: (outcome: Promise<void>) => void;
    let fail!: (err: unknown) => void;
    // An event counts as stored only once its person and group rows are too: if those failed, the client's
    // retry must run the event again rather than be dropped as a duplicate.
    const claim = new Promise<void>((resolve, reject) => {
      settle = resolve;
      fail = reject;
    });
    // Handled here: a failed job must not be an unhandled rejection when no copy waits on its claim.
    claim.catch(() => undefined);
    // The duplicate check and the claim of every new uuid happen first, in one synchronous stretch: no other
    // actor can slip the same uuid in between, and a later copy (another request, or the same uuid twice in
    // this job) waits for this job's commit instead of being processed again.
    const { fresh, waits } = this.#dedup.claim(job.events, claim);
    for (const w of waits) job.commits.push(w);
    const duplicates = job.events.length - fresh.length;
    if (duplicates > 0) this.#deps.metrics.ingestDuplicates.inc(duplicates);
    if (fresh.length === 0) {
      settle(Promise.resolve());
      return;
    }
    const failed = (err: unknown): never => {
      fail(err);
      throw err;
    };
    let out: PipelineOutput | Promise<PipelineOutput>;
    try {
      out = this.#pipeline.run(fresh);
    } catch (err) {
      return failed(err);
    }
    if (out instanceof Promise) return out.then((o) => this.#write(job, o, settle)).catch(failed);
    try {
      this.#write(job, out, settle);
    } catch (err) {
      failed(err);
    }
  }

  /** Hands a job's rows to the writer; `settle` settles the job's claim with their commit. */
  #write(job: Job, out: PipelineOutput, settle: (outcome: Promise<void>) => void): void {
    job.commits.push(...out.written);
    this.#deps.properties?.observe(out.events);
    // With other writers, an event's row goes to the store only once its person and group rows are there:
    // the one that takes over a dead process's batches drops the events the store holds, so an event row
    // committed without them would leave them never written.
    const state = this.#deps.store.soleWriter ? undefined : allCommitted(out.written);
    let commit: Promise<void> | undefined;
    if (out.events.length > 0) {
      const rows = out.events.map(eventValues);
      commit = state
        ? state.then(() => this.#writer.writeValues('events', EVENT_COLUMNS, rows))
        : this.#writer.writeValues('events', EVENT_COLUMNS, rows);
    }
    settle(allCommitted([commit, ...out.written]) ?? Promise.resolve());
    if (commit) {
      // The callback keeps two values, not the events: they are let go once their rows are written.
      const lane = job.lane;
      const count = out.events.length;
      job.commits.push(watched(commit.then(() => this.#deps.metrics.ingestEvents.inc({ lane }, count))));
    }
    if (out.warnings.length > 0)
      job.commits.push(watched(this.#writer.write('ingestion_warnings', out.warnings.map(warningRow))));
  }
}
