/**
 * Consumer sets of the ingest bus in one test process, each on its own NATS connection as a `weir ingest`
 * process has, with what the lease tests need around them: a publisher, sinks that record what each member was
 * handed and in which order, a crash without a goodbye, and the checks of order and shares.
 */
import { randomUUID } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import type { Test } from 'tap';
import type { BatchSink } from '../../src/bus/jetstream/consumer.ts';
import { NatsLink } from '../../src/bus/jetstream/connection.ts';
import { IngestConsumers } from '../../src/bus/jetstream/ingest-consumers.ts';
import { JetStreamBus } from '../../src/bus/jetstream/jetstream-bus.ts';
import type { BatchOrigin, CapturedEvent, EventBatch } from '../../src/core/event.ts';
import type { Logger } from '../../src/core/logger.ts';
import { Metrics } from '../../src/core/metrics.ts';
import { startNatsServer, type NatsServer } from './nats-server.ts';
import { metricValue } from './roles.ts';
import { waitFor } from './weir.ts';

export interface Member {
  readonly name: string;
  readonly link: NatsLink;
  readonly consumers: IngestConsumers;
  readonly metrics: Metrics;
}

/** What a test starts (servers, members, publishers), closed in reverse order by `close`. */
export class LeaseHarness {
  readonly #cleanups: (() => Promise<void>)[] = [];

  constructor(
    readonly leaseMs: number,
    readonly logger: Logger,
  ) {}

  /** Closes what `fn` opened when the harness closes. */
  later(fn: () => Promise<void>): void {
    this.#cleanups.push(fn);
  }

  async close(): Promise<void> {
    for (const c of this.#cleanups.reverse()) await c().catch(() => undefined);
  }

  async nats(): Promise<NatsServer> {
    const server = await startNatsServer();
    this.later(() => server.close());
    return server;
  }

  /** A consumer set on its own connection to `url`, as a `weir ingest` process has. */
  async join(url: string, name: string, sink: BatchSink, partitions: number): Promise<Member> {
    const metrics = new Metrics({ defaultMetrics: false });
    const link = await NatsLink.open(url, name, { metrics, logger: this.logger });
    const consumers = await IngestConsumers.start(
      { natsUrl: url, busPartitions: partitions, busAckWaitMs: 30_000, busLeaseMs: this.leaseMs },
      { sink, metrics, logger: this.logger.child({ member: name }), link },
    );
    this.later(async () => {
      await consumers.stop();
      await link.close();
    });
    return { name, link, consumers, metrics };
  }

  async publisher(url: string, partitions: number): Promise<JetStreamBus> {
    const metrics = new Metrics({ defaultMetrics: false });
    const bus = await JetStreamBus.connect(
      { natsUrl: url, busPartitions: partitions, busCompression: 'none', publishTimeoutMs: 5000 },
      { metrics, logger: this.logger },
    );
    this.later(() => bus.close());
    return bus;
  }

  /** Messages left in the EVENTS stream (work queue: the unacknowledged ones). */
  async streamMessages(url: string): Promise<number> {
    const link = await NatsLink.open(url, 'check', {
      metrics: new Metrics({ defaultMetrics: false }),
      logger: this.logger,
    });
    try {
      return (await (await jetstreamManager(link.nc)).streams.info('EVENTS')).state.messages;
    } finally {
      await link.close();
    }
  }
}

/** Closes a member's connection without a goodbye: no lease released, nothing in flight acknowledged. */
export async function crash(m: Member): Promise<void> {
  await m.link.nc.close();
}

/** A personless event of `distinctId` whose name is its number in that id's sequence. */
export function event(distinctId: string, n: number): CapturedEvent {
  const now = Date.now();
  return {
    projectId: 1,
    uuid: randomUUID(),
    event: String(n),
    distinctId,
    timestamp: now,
    properties: { $process_person_profile: false },
    receivedAt: now,
  };
}

/** One batch handed to a sink, as it was handed. */
export interface Handled {
  readonly member: string;
  readonly at: number;
  readonly events: readonly CapturedEvent[];
  readonly maybeStored: boolean;
  /** Handed to a frozen member, which never finished it (nor acknowledged it). */
  readonly unfinished: boolean;
}

/**
 * Sinks that record what each member was handed, in the order of the calls (all members are in this
 * process, so one log orders them all). A frozen sink records a batch and never finishes it: its member
 * never acknowledges it, as a process killed mid-batch would not. Such a batch may or may not have been
 * stored, so it says nothing of order: its events must be handed on again, before any later event of theirs.
 */
export class Recorder {
  readonly log: Handled[] = [];
  readonly frozen = new Set<string>();
  readonly #hung: (() => void)[] = [];

  constructor(harness: LeaseHarness) {
    harness.later(() => Promise.resolve(this.#hung.forEach((r) => r())));
  }

  sink(member: string): BatchSink {
    return {
      handle: (batch: EventBatch, origin?: BatchOrigin) => {
        this.log.push({
          member,
          at: Date.now(),
          events: batch.events,
          maybeStored: origin?.maybeStored === true,
          unfinished: this.frozen.has(member),
        });
        if (!this.frozen.has(member)) return Promise.resolve();
        return new Promise<void>((_, reject) => this.#hung.push(() => reject(new Error('test over'))));
      },
    };
  }
}

/** Publishes numbered events for `ids` until stopped: each round one event per id, as one request. */
export function publishing(bus: JetStreamBus, ids: readonly string[]): { stop(): Promise<number> } {
  let rounds = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      await bus.publish([{ lane: 'live', events: ids.map((id) => event(id, rounds)), warnings: [] }]);
      rounds++;
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return rounds;
    },
  };
}

/**
 * Checks each id's events were handed on in order, batches a member never finished left out: the first time
 * each number is seen, it is the next one; a number seen again (a batch given again after a takeover) only ever
 * in a batch flagged `maybeStored`. Returns how many events were seen again.
 */
export function checkOrder(t: Test, log: readonly Handled[], ids: readonly string[], rounds: number): number {
  const next = new Map(ids.map((id) => [id, 0]));
  let again = 0;
  const problems: string[] = [];
  for (const h of log.filter((h) => !h.unfinished))
    for (const e of h.events) {
      const n = Number(e.event);
      const expected = next.get(e.distinctId)!;
      if (n === expected) next.set(e.distinctId, n + 1);
      else if (n < expected) {
        again++;
        if (!h.maybeStored) problems.push(`${e.distinctId} #${n} again at ${h.member}, not flagged`);
      } else problems.push(`${e.distinctId} #${n} before #${expected} (${h.member})`);
    }
  t.same(problems.slice(0, 5), [], `every id's events in order (${problems.length} problems)`);
  t.same(
    ids.filter((id) => next.get(id) !== rounds),
    [],
    `every id's ${rounds} events handed on`,
  );
  return again;
}

export async function balanced(
  members: readonly Member[],
  units: number,
  timeoutMs = 15_000,
): Promise<string[][]> {
  return waitFor(
    () => {
      const held = members.map((m) => m.consumers.held());
      const all = held.flat();
      const even = held.every((h) => Math.abs(h.length - units / members.length) < 1);
      return Promise.resolve(all.length === units && new Set(all).size === units && even ? held : undefined);
    },
    timeoutMs,
    `the ${units} units split among ${members.map((m) => m.name).join(', ')}`,
  );
}

export function count(log: readonly Handled[]): number {
  return log.reduce((n, h) => n + h.events.length, 0);
}

export function distinct(log: readonly Handled[]): number {
  return new Set(log.flatMap((h) => h.events.map((e) => e.uuid))).size;
}

/** A metric's value summed over its labels. */
export async function metric(metrics: Metrics, name: string): Promise<number> {
  return metricValue(await metrics.registry.metrics(), name);
}
