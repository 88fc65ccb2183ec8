import { StoreQueryError } from '../core/ports.ts';

/**
 * The engine's errors as both store adapters see them, converted once at the store's edge: a refusal of the
 * engine becomes a StoreQueryError; anything else (a broken connection, a bug) is left as it is.
 */

/** The store cannot take more rows until what it was given is written (back-pressure: capture answers 503). */
export class StoreBusyError extends Error {
  constructor(pendingBytes: number, what = 'committed and not yet applied') {
    super(`the store is behind: ${pendingBytes} bytes ${what}`);
    this.name = 'StoreBusyError';
  }
}

/**
 * The engine's error number of `err`, or undefined when it is not the engine's: chDB's own calls carry it as
 * `clickhouseCode`, clickhouse-js's errors (over HTTP, or chDB's copy of the client) as a numeric `code` string
 * beside a `type`, and a StoreQueryError (converted already) as its `code`.
 */
export function engineCode(err: unknown): number | undefined {
  if (err instanceof StoreQueryError) return err.code;
  if (typeof err !== 'object' || err === null) return undefined;
  const { clickhouseCode, code, type } = err as { clickhouseCode?: unknown; code?: unknown; type?: unknown };
  if (typeof clickhouseCode === 'number') return clickhouseCode;
  if (err instanceof Error && typeof code === 'string' && /^\d+$/.test(code) && typeof type === 'string')
    return Number(code);
  return undefined;
}

/** The engine's error as a StoreQueryError; anything else (a broken connection, a bug) as it is. */
export function toStoreQueryError(err: unknown): unknown {
  // Matched by shape: chDB's connection builds its errors with its own copy of clickhouse-js's error class.
  const { code, type } = err as { code?: unknown; type?: unknown };
  if (!(err instanceof Error) || typeof code !== 'string' || !/^\d+$/.test(code) || typeof type !== 'string')
    return err;
  const message = err.message.replace(/\s*\(version [^)]*\)\s*$/, '').trim();
  return new StoreQueryError(Number(code), type, message);
}

/**
 * ClickHouse errors that say a row's data is bad (a parse or type error), as opposed to the store being
 * unable to write at all: a row with one is set aside whatever the rest of its block does (refused-rows.ts).
 */
const DATA_ERROR_CODES = new Set([
  6, // CANNOT_PARSE_TEXT
  25, // CANNOT_PARSE_ESCAPE_SEQUENCE
  26, // CANNOT_PARSE_QUOTED_STRING
  27, // CANNOT_PARSE_INPUT_ASSERTION_FAILED
  33, // CANNOT_READ_ALL_DATA
  38, // CANNOT_PARSE_DATE
  41, // CANNOT_PARSE_DATETIME
  53, // TYPE_MISMATCH
  69, // ARGUMENT_OUT_OF_BOUND
  70, // CANNOT_CONVERT_TYPE
  72, // CANNOT_PARSE_NUMBER
  73, // UNKNOWN_FORMAT
  117, // INCORRECT_DATA
  128, // TOO_LARGE_ARRAY_SIZE
  131, // TOO_LARGE_STRING_SIZE
  190, // SIZES_OF_ARRAYS_DONT_MATCH
  321, // VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE
  349, // CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN
  376, // CANNOT_PARSE_UUID
  407, // DECIMAL_OVERFLOW
  441, // CANNOT_PARSE_DOMAIN_VALUE_FROM_STRING
  467, // CANNOT_PARSE_BOOL
  468, // CANNOT_PARSE_IPV4
  469, // VIOLATED_CONSTRAINT
  691, // UNKNOWN_ELEMENT_OF_ENUM
]);

/**
 * ClickHouse errors of a store that cannot write now, whatever the rows: never a row's fault, so nothing is
 * set aside for them and the block waits (the commit log, or the bus) until the store can take it.
 */
const STORE_FAULT_CODES = new Set([
  3, // UNEXPECTED_END_OF_FILE
  16, // NO_SUCH_COLUMN_IN_TABLE
  32, // ATTEMPT_TO_READ_AFTER_EOF
  60, // UNKNOWN_TABLE
  74, // CANNOT_READ_FROM_FILE_DESCRIPTOR
  75, // CANNOT_WRITE_TO_FILE_DESCRIPTOR
  76, // CANNOT_OPEN_FILE
  81, // UNKNOWN_DATABASE
  159, // TIMEOUT_EXCEEDED
  164, // READONLY
  173, // CANNOT_ALLOCATE_MEMORY
  202, // TOO_MANY_SIMULTANEOUS_QUERIES
  209, // SOCKET_TIMEOUT
  210, // NETWORK_ERROR
  218, // TABLE_IS_DROPPED
  225, // NO_ZOOKEEPER
  236, // ABORTED
  241, // MEMORY_LIMIT_EXCEEDED
  242, // TABLE_IS_READ_ONLY
  243, // NOT_ENOUGH_SPACE
  252, // TOO_MANY_PARTS
  279, // ALL_CONNECTION_TRIES_FAILED
  285, // TOO_FEW_LIVE_REPLICAS
  286, // UNSATISFIED_QUORUM_FOR_PREVIOUS_WRITE
  319, // UNKNOWN_STATUS_OF_INSERT
  394, // QUERY_WAS_CANCELLED
  425, // SYSTEM_ERROR
  473, // DEADLOCK_AVOIDED
  497, // ACCESS_DENIED
  516, // AUTHENTICATION_FAILED
  999, // KEEPER_EXCEPTION
  1000, // POCO_EXCEPTION
  1001, // STD_EXCEPTION (a file system's error, such as a full disk)
]);

/** A data error of the engine: the row is bad (see DATA_ERROR_CODES). */
export function isDataError(err: unknown): boolean {
  const code = engineCode(err);
  return code !== undefined && DATA_ERROR_CODES.has(code);
}

/**
 * An error of the engine that may be a row's: a data error, or one not known as the store failing. (A
 * broken connection or a bug of Weir's carries no engine code and is never a row's.)
 */
export function isRowError(err: unknown): boolean {
  const code = engineCode(err);
  return code !== undefined && !STORE_FAULT_CODES.has(code);
}

/** The engine's name of the error (`CANNOT_PARSE_ESCAPE_SEQUENCE`), or `UNKNOWN`: a metric's label. */
export function engineErrorName(err: unknown): string {
  const type = (err as { type?: unknown } | null)?.type;
  if (typeof type === 'string' && /^[A-Z][A-Z0-9_]*$/.test(type)) return type;
  const message = err instanceof Error ? err.message : '';
  return /\(([A-Z][A-Z0-9_]+)\)(?![\s\S]*\([A-Z][A-Z0-9_]+\))/.exec(message)?.[1] ?? 'UNKNOWN';
}
