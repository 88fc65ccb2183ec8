import type { EventBatch } from './event.ts';

/**
 * The ports between Weir's layers. Adapters (embedded or JetStream bus, chDB or ClickHouse-server store,
 * file or NATS KV catalog) implement them at the edge; nothing above a port knows which adapter runs.
 */

/** Carries captured events to ingest. */
export interface Bus {
  /**
   * Hands the batches on. Resolves only once every event is durable (a JetStream ack, or the embedded
   * store's commit); rejects with AppError `unavailable` when the bus cannot take them now.
   */
  publish(batches: readonly EventBatch[]): Promise<void>;
  /** Whether the bus can accept events now (drives `/_ready`). */
  isReady(): boolean;
  /** Stops taking events and finishes what was taken. */
  close(): Promise<void>;
}

export type Row = Record<string, unknown>;

/** The analytical store (ClickHouse, or chDB in-process). */
export interface Store {
  /** Inserts rows; resolves when they are committed. */
  insert(table: string, rows: readonly Row[]): Promise<void>;
  /** Runs a query with typed parameters (`{name:Type}` placeholders); returns rows as objects. */
  query<T = Row>(sql: string, params?: Record<string, unknown>): Promise<T[]>;
  /** Runs a statement that returns no rows (DDL). */
  command(sql: string): Promise<void>;
  /**
   * False while the store is too far behind to take a new request's rows whole; capture then refuses the
   * request up front (503) rather than have part of it stored. Stores that never fall behind omit it.
   */
  accepting?(): boolean;
  close(): Promise<void>;
}

export interface Project {
  readonly id: number;
  readonly name: string;
  /** The project API key (`phc_…`): public, write-only, sent by SDKs in capture bodies. */
  readonly apiToken: string;
  readonly createdAt: string;
}

/** Projects and keys. */
export interface Catalog {
  /** The project a project API key names, or undefined. Hot path of capture: must not do I/O. */
  projectByApiToken(token: string): Project | undefined;
  listProjects(): readonly Project[];
  close(): Promise<void>;
}
