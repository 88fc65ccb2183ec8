import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** A registry's metrics as prom-client's JSON (what crosses from a capture thread to the main thread). */
export type MetricsJson = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

/**
 * A count on the request path for one set of a counter's labels, kept as a plain number and added to the
 * counter whenever the registry is read. prom-client makes a key string of the labels at every `inc`
 * (~150 bytes and a fraction of a microsecond, at tens of thousands of requests a second).
 */
export class Tally {
  #count = 0;

  constructor(
    readonly counter: Counter<string>,
    readonly labels: Readonly<Record<string, string | number>>,
  ) {}

  add(n = 1): void {
    this.#count += n;
  }

  /** Adds what was counted since the last flush to the counter. */
  flush(): void {
    if (this.#count === 0) return;
    this.counter.inc(this.labels, this.#count);
    this.#count = 0;
  }
}

/**
 * Every Prometheus metric Weir exports, on one registry per process (not prom-client's global one, so two
 * Weirs in one test process do not collide).
 */
export class Metrics {
  readonly registry = new Registry();
  readonly #tallies: Tally[] = [];

  readonly captureRequests = new Counter({
    name: 'weir_capture_requests_total',
    help: 'Capture requests by route and response status.',
    labelNames: ['route', 'status'] as const,
    registers: [this.registry],
    collect: () => this.#flushTallies(),
  });
  readonly captureDuration = new Histogram({
    name: 'weir_capture_request_duration_seconds',
    help: 'Time from the end of a capture request body to its response (decode, validate, durable hand-off).',
    labelNames: ['route'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly captureEvents = new Counter({
    name: 'weir_capture_events_total',
    help: 'Events accepted by capture, by lane.',
    labelNames: ['lane'] as const,
    registers: [this.registry],
    collect: () => this.#flushTallies(),
  });
  readonly ingestDroppedDeleted = new Counter({
    name: 'weir_ingest_events_of_deleted_projects_total',
    help: 'Events ingest dropped because their project was deleted while they were on their way.',
    registers: [this.registry],
  });
  readonly captureDropped = new Counter({
    name: 'weir_capture_events_dropped_total',
    help: 'Events answered 200 but not ingested (SPEC §2 silent drops), by reason.',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly captureBytes = new Counter({
    name: 'weir_capture_body_bytes_total',
    help: 'Capture request body bytes as received on the wire.',
    registers: [this.registry],
  });
  readonly pendingEvents = new Gauge({
    name: 'weir_ingest_pending_events',
    help: 'Events handed to ingest and not yet committed (capture answers 503 above the limit).',
    registers: [this.registry],
  });
  readonly ingestEvents = new Counter({
    name: 'weir_ingest_events_total',
    help: 'Events committed to the store, by lane.',
    labelNames: ['lane'] as const,
    registers: [this.registry],
  });
  readonly ingestDuplicates = new Counter({
    name: 'weir_ingest_duplicate_events_total',
    help: 'Events not written again because their uuid was already stored (retried requests).',
    registers: [this.registry],
  });
  readonly ingestPersonLookups = new Counter({
    name: 'weir_ingest_person_lookups_total',
    help:
      'Distinct ids not in the person cache, by what became of them: looked up in the store, or known to be new ' +
      '(ruled out by the known-ids filter: no lookup).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly ingestSharedConflicts = new Counter({
    name: 'weir_ingest_shared_state_conflicts_total',
    help:
      'Conditional writes of shared person and group state (NATS KV, several ingest processes) that lost to ' +
      'another write and were worked out again, by record: person, link, group, types.',
    labelNames: ['record'] as const,
    registers: [this.registry],
  });
  readonly ingestSharedCompletions = new Counter({
    name: 'weir_ingest_shared_state_completions_total',
    help:
      'Changes another event left half done in shared person state (a merge absorbed, a link joined) that ' +
      'this process completed on reaching them, by change: merge, link.',
    labelNames: ['change'] as const,
    registers: [this.registry],
  });
  readonly storeInsertDuration = new Histogram({
    name: 'weir_store_insert_duration_seconds',
    help: 'Duration of one group-committed store insert.',
    labelNames: ['table'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly storeInsertRows = new Histogram({
    name: 'weir_store_insert_rows',
    help: 'Rows in one group-committed store insert.',
    labelNames: ['table'] as const,
    buckets: [1, 10, 100, 1000, 10000, 100000],
    registers: [this.registry],
  });
  readonly storeInsertErrors = new Counter({
    name: 'weir_store_insert_errors_total',
    help: 'Failed store inserts (their events were answered 503 and retried by clients).',
    labelNames: ['table'] as const,
    registers: [this.registry],
  });

  readonly storeCommitDuration = new Histogram({
    name: 'weir_store_commit_duration_seconds',
    help: "Duration of one commit to the embedded store's commit log (write, and fdatasync if enabled).",
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5],
    registers: [this.registry],
  });
  readonly storePendingBytes = new Gauge({
    name: 'weir_store_pending_bytes',
    help: 'Bytes committed to the commit log and not yet applied to the tables.',
    registers: [this.registry],
  });
  readonly storeEngineWaiting = new Gauge({
    name: 'weir_store_engine_waiting',
    help: "The embedded store's own calls to chDB (applying the commit log, ingest's lookups, DDL) waiting for their turn on its connection.",
    registers: [this.registry],
  });
  readonly storeReadsWaiting = new Gauge({
    name: 'weir_store_reads_waiting',
    help: 'Reads of the embedded store (query API, endpoint runs, materialization refreshes) waiting for a reader connection, by kind.',
    labelNames: ['kind'],
    registers: [this.registry],
  });
  readonly storeReadsRunning = new Gauge({
    name: 'weir_store_reads_running',
    help: 'Reads of the embedded store running on its reader connections, by kind.',
    labelNames: ['kind'],
    registers: [this.registry],
  });
  readonly storeReadWait = new Histogram({
    name: 'weir_store_read_wait_seconds',
    help: 'How long a read of the embedded store waited for a reader connection, by kind.',
    labelNames: ['kind'],
    buckets: [0.001, 0.005, 0.025, 0.1, 0.25, 1, 2.5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly storeReadsRefused = new Counter({
    name: 'weir_store_reads_refused_total',
    help: "Reads refused unrun: 'adhoc_limit' (the project's ad-hoc queries at WEIR_QUERY_ADHOC_CONCURRENCY, 429) or 'wait_timeout' (waited past the query's time limit, 504).",
    labelNames: ['kind', 'reason'],
    registers: [this.registry],
  });
  readonly storeApplyDuration = new Histogram({
    name: 'weir_store_apply_duration_seconds',
    help: 'Duration of applying one block of the commit log to the tables.',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly storeApplyRows = new Histogram({
    name: 'weir_store_apply_rows',
    help: 'Rows in one applied block of the commit log.',
    buckets: [1, 10, 100, 1000, 10000, 100000, 1000000],
    registers: [this.registry],
  });
  readonly storeQueryDuration = new Histogram({
    name: 'weir_store_query_duration_seconds',
    help: 'Duration of store queries (ingest lookups, the query API), including applying what they must see.',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly storeApplyErrors = new Counter({
    name: 'weir_store_apply_errors_total',
    help: 'Failed attempts to apply a block of the commit log (retried with backoff; nothing is lost).',
    registers: [this.registry],
  });
  readonly rowsQuarantined = new Counter({
    name: 'weir_ingest_rows_quarantined_total',
    help: "Rows the store refused, set aside in the quarantine with the engine's reason (the error's name).",
    labelNames: ['table', 'reason'] as const,
    registers: [this.registry],
  });
  readonly rowsReplayed = new Counter({
    name: 'weir_ingest_rows_replayed_total',
    help: 'Rows of the quarantine that a replay stored.',
    labelNames: ['table'] as const,
    registers: [this.registry],
  });
  readonly busPublishDuration = new Histogram({
    name: 'weir_bus_publish_duration_seconds',
    help: "Time from publishing a flight of capture requests' events to JetStream until every one is acknowledged.",
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly busPublishedMessages = new Counter({
    name: 'weir_bus_published_messages_total',
    help: 'JetStream messages (micro-batches of events) acknowledged, by lane.',
    labelNames: ['lane'] as const,
    registers: [this.registry],
  });
  readonly busPublishFailures = new Counter({
    name: 'weir_bus_publish_failures_total',
    help: 'Capture requests answered 503 because JetStream could not take their events, by reason.',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly busConsumerPending = new Gauge({
    name: 'weir_bus_consumer_pending_messages',
    help: 'Consumer lag: messages in the stream not yet delivered to ingest, by lane (polled).',
    labelNames: ['lane'] as const,
    registers: [this.registry],
  });
  readonly busConsumerAckPending = new Gauge({
    name: 'weir_bus_consumer_ack_pending_messages',
    help: 'Messages delivered to ingest and not yet acknowledged (committed), by lane (polled).',
    labelNames: ['lane'] as const,
    registers: [this.registry],
  });
  readonly busRedeliveries = new Counter({
    name: 'weir_bus_redelivered_messages_total',
    help: 'Messages JetStream delivered again (after a failed commit, an ack timeout or an ingest crash), by lane.',
    labelNames: ['lane'] as const,
    registers: [this.registry],
  });
  readonly busNaks = new Counter({
    name: 'weir_bus_nak_total',
    help: 'Messages ingest could not commit and handed back for a later redelivery, by lane.',
    labelNames: ['lane'] as const,
    registers: [this.registry],
  });
  readonly busPartitionsHeld = new Gauge({
    name: 'weir_bus_partitions_held',
    help: 'Live partitions (lane="live") and the historical lane (lane="historical") this ingest process holds the lease of and consumes.',
    labelNames: ['lane'] as const,
    registers: [this.registry],
  });
  readonly busPartitionTakeovers = new Counter({
    name: 'weir_bus_partition_takeovers_total',
    help: 'Leases this ingest process took from another whose heartbeat had stopped (not handed over), by lane.',
    labelNames: ['lane'] as const,
    registers: [this.registry],
  });
  readonly busAcksDurable = new Gauge({
    name: 'weir_bus_acks_durable',
    help: '1 when every JetStream server checked syncs before it acknowledges (and has no known data-loss bug), else 0.',
    registers: [this.registry],
  });
  readonly busServerInfo = new Gauge({
    name: 'weir_bus_server_info',
    help: 'A JetStream server this process checked at start: its version and how it syncs (always, interval, unknown).',
    labelNames: ['server', 'version', 'sync'] as const,
    registers: [this.registry],
  });
  readonly natsConnected = new Gauge({
    name: 'weir_nats_connected',
    help: 'Whether the NATS connection is up (1) or reconnecting (0), by connection.',
    labelNames: ['connection'] as const,
    registers: [this.registry],
  });
  readonly materializedTables = new Gauge({
    name: 'weir_materialized_tables',
    help: 'Materializations held in memory as Arrow tables by the query actors.',
    registers: [this.registry],
  });
  readonly materializedBytes = new Gauge({
    name: 'weir_materialized_bytes',
    help: 'Bytes of the Arrow tables held by the query actors (bounded by WEIR_MATERIALIZED_MEMORY_MB).',
    registers: [this.registry],
  });
  readonly materializedLoads = new Counter({
    name: 'weir_materialized_loads_total',
    help: 'Materializations read from object storage into a query actor, by result (ok, failed).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly materializedLoadDuration = new Histogram({
    name: 'weir_materialized_load_duration_seconds',
    help: 'Time a query actor took to decode a materialization from Parquet into Arrow.',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly materializedEvictions = new Counter({
    name: 'weir_materialized_evictions_total',
    help: 'Materializations dropped from memory to stay within the bound (read again on their next run).',
    registers: [this.registry],
  });
  readonly materializedRunDuration = new Histogram({
    name: 'weir_materialized_run_duration_seconds',
    help: 'Time from a run reaching the query pool to its answer, loading included, by result (ok, error).',
    labelNames: ['result'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly queryActorRestarts = new Counter({
    name: 'weir_query_actor_restarts_total',
    help: 'Query actor threads started again, by reason (crash; retire: after a damaged Parquet object).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: 'weir_' });
  }

  /**
   * A count of `counter` under `labels`, added to it when the registry is read. For the request path's
   * counters (`captureRequests`, `captureEvents`), whose reads flush every tally.
   */
  tally(counter: Counter<string>, labels: Readonly<Record<string, string | number>>): Tally {
    const tally = new Tally(counter, labels);
    this.#tallies.push(tally);
    return tally;
  }

  #flushTallies(): void {
    for (const t of this.#tallies) t.flush();
  }
}
