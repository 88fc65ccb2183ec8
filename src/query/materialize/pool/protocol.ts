import type { Table } from 'apache-arrow';
import { AppError } from '../../../errors/app-error.ts';
import type { ErrorCode } from '../../../errors/codes.ts';
import type { ParamValue } from '../../clickhouse/variables.ts';
import type { ServedResult, ServingPlan } from '../serving.ts';

export type { ServingPlan };

/** Which rows of the answer a run wants. */
export interface RunPage {
  readonly limit?: number;
  readonly offset?: number;
}

/** One run of a materialized version: which stored table answers it, and how. */
export interface RunRequest {
  /** The Parquet object's key in the ObjectStore; also the table's name in the pool. */
  readonly tableKey: string;
  /** How the run is answered from the table (serving.ts); posted to the actor as it is. */
  readonly plan: ServingPlan;
  readonly variables: Record<string, ParamValue>;
  readonly page: RunPage;
}

/** A run's answer: the page's rows, and whether the query has more. */
export type RunAnswer = ServedResult;

/** What an actor calls to answer a run from a table it holds: pure, synchronous, no I/O. */
export type ExecuteServing = (
  table: Table,
  plan: ServingPlan,
  variables: Record<string, ParamValue>,
  page: RunPage,
) => RunAnswer;

/**
 * Why a stored table could not be had: `not_found` (no object under the key: a newer materialization
 * replaced it, or it was never written), `unavailable` (the store cannot be reached now; a retry may work),
 * `damaged` (the bytes are not a Parquet file Weir can read), `failed` (anything else from the store).
 */
export type TableProblem = 'not_found' | 'unavailable' | 'damaged' | 'failed';

/**
 * A run that could not be answered because its table could not be loaded. The run path tells it from other
 * errors to answer from the engine instead; left unhandled it is an ordinary 503 or 500.
 */
export class MaterializedTableError extends AppError {
  readonly problem: TableProblem;
  readonly tableKey: string;

  constructor(problem: TableProblem, tableKey: string, detail: string) {
    super(problem === 'unavailable' ? 'unavailable' : 'server_error', {
      detail,
      retriable: problem === 'unavailable',
    });
    this.name = 'MaterializedTableError';
    this.problem = problem;
    this.tableKey = tableKey;
  }
}

/** An error as it crosses between threads: classes do not survive a structured clone. */
export type WireError =
  | {
      readonly kind: 'app';
      readonly code: ErrorCode;
      readonly detail: string;
      readonly attr: string | null;
      readonly retriable: boolean;
    }
  | {
      readonly kind: 'table';
      readonly problem: TableProblem;
      readonly tableKey: string;
      readonly detail: string;
    }
  /** A foreign error: its text is for the log only. */
  | { readonly kind: 'other'; readonly message: string };

export function toWire(err: unknown): WireError {
  if (err instanceof MaterializedTableError)
    return { kind: 'table', problem: err.problem, tableKey: err.tableKey, detail: err.message };
  if (err instanceof AppError)
    return { kind: 'app', code: err.code, detail: err.message, attr: err.attr, retriable: err.retriable };
  return { kind: 'other', message: err instanceof Error ? `${err.name}: ${err.message}` : String(err) };
}

export function fromWire(wire: WireError): Error {
  switch (wire.kind) {
    case 'table':
      return new MaterializedTableError(wire.problem, wire.tableKey, wire.detail);
    case 'app':
      return new AppError(wire.code, {
        detail: wire.detail,
        attr: wire.attr ?? undefined,
        retriable: wire.retriable,
      });
    case 'other':
      return new Error(wire.message);
  }
}

/** Messages from the pool to an actor. */
export type ToActor =
  | ({ readonly type: 'run'; readonly id: number } & RunRequest)
  /** The bytes of a table the actor asked for, handed over (not copied). */
  | { readonly type: 'table'; readonly tableKey: string; readonly bytes: Uint8Array }
  | { readonly type: 'table-failed'; readonly tableKey: string; readonly error: WireError }
  | { readonly type: 'forget'; readonly tableKey: string };

/** What an actor's held tables and work came to since its last report, for the pool's metrics. */
export interface ActorStats {
  readonly tables: number;
  readonly bytes: number;
  readonly loads: number;
  readonly loadFailures: number;
  readonly evictions: number;
  /** How long each load since the last report took. */
  readonly loadSeconds: readonly number[];
}

/** Messages from an actor to the pool. */
export type FromActor =
  /** The actor does not hold the table: the pool reads it from the ObjectStore and sends it. */
  | { readonly type: 'need'; readonly tableKey: string }
  | { readonly type: 'answer'; readonly id: number; readonly answer: RunAnswer }
  | { readonly type: 'failed'; readonly id: number; readonly error: WireError }
  | ({ readonly type: 'stats' } & ActorStats)
  /**
   * The actor's Parquet decoder may be broken (a failed decode can leave parquet-wasm's state unusable): it
   * has answered what it could and exits, to be started again. Its other runs are sent to the new one.
   */
  | { readonly type: 'retire'; readonly reason: string };

/** What the pool gives an actor thread when it starts it. */
export interface ActorInit {
  readonly index: number;
  /** The actor's share of the memory for tables. */
  readonly memoryBytes: number;
  /** A module exporting `executeServing` in place of the rewrite's (tests only). */
  readonly executorModule: string | undefined;
}
