import { StoreQueryError, StoreThrottled, StoreWaitTimeout } from '../../core/ports.ts';
import { AppError } from '../../errors/app-error.ts';
import type { QueryLimits } from './printer.ts';

/** Limits of the run the engine enforced: the caller's query is too heavy, not wrong. */
const LIMIT_TYPES = new Set([
  'MEMORY_LIMIT_EXCEEDED',
  'TOO_MANY_ROWS_OR_BYTES',
  'TOO_MANY_ROWS',
  'TOO_MANY_BYTES',
  'TOO_MANY_COLUMNS',
  'TOO_MANY_TEMPORARY_COLUMNS',
  'TOO_BIG_AST',
  'TOO_DEEP_AST',
  'TOO_DEEP_RECURSION',
  'TOO_DEEP_SUBQUERIES',
  'TOO_MANY_SUBQUERIES',
  'QUERY_IS_TOO_LARGE',
  'SET_SIZE_LIMIT_EXCEEDED',
  'TOO_LARGE_ARRAY_SIZE',
  'TOO_LARGE_STRING_SIZE',
  'TOO_SLOW',
]);

/**
 * Faults of Weir or of the store, not of the query: the tables Weir printed are missing, the engine broke,
 * or Weir's own settings were refused. These are 500s, logged; the caller learns nothing of them.
 */
const SERVER_TYPES = new Set([
  'LOGICAL_ERROR',
  'UNKNOWN_TABLE',
  'UNKNOWN_DATABASE',
  'UNKNOWN_SETTING',
  'READONLY',
  'ACCESS_DENIED',
  'NETWORK_ERROR',
  'SOCKET_TIMEOUT',
  'ALL_CONNECTION_TRIES_FAILED',
  'TABLE_IS_DROPPED',
  'CANNOT_OPEN_FILE',
  'CANNOT_READ_ALL_DATA',
  'CORRUPTED_DATA',
  'CHECKSUM_DOESNT_MATCH',
  'NOT_ENOUGH_SPACE',
  'CANNOT_ALLOCATE_MEMORY',
  'ABORTED',
  'QUERY_WAS_CANCELLED',
]);

/**
 * The engine's refusal of a printed query as the error the caller gets. Its message is passed on (it names
 * functions, types and the caller's own values, which is what a person needs to fix the query) without
 * the echo of the printed query ClickHouse appends. Other errors are left for the 500 handler.
 */
export function queryFailure(err: unknown, limits: QueryLimits): unknown {
  if (!(err instanceof StoreQueryError)) return err;
  if (err instanceof StoreThrottled) {
    return new AppError('throttled', {
      detail: `The query was not run: ${err.message}. Retry after the time in Retry-After, or when one of them has answered.`,
      retryAfterSeconds: 1,
      cause: err,
    });
  }
  if (err instanceof StoreWaitTimeout) {
    return new AppError('timeout', {
      detail: `The query ${err.message}, and was not run; try again when fewer queries run at once.`,
      cause: err,
    });
  }
  if (err.type === 'TIMEOUT_EXCEEDED') {
    return new AppError('timeout', {
      detail: `The query ran longer than the limit of ${limits.maxExecutionSeconds} s; narrow its time range or simplify it.`,
      cause: err,
    });
  }
  if (SERVER_TYPES.has(err.type)) return new AppError('server_error', { cause: err });
  const message = clean(err.message);
  if (err.type === 'TOO_MANY_ROWS_OR_BYTES' && /Limit for result/.test(message)) {
    return new AppError('query_limit_exceeded', {
      detail: /max rows/.test(message)
        ? `The result has more than ${limits.maxResultRows} rows: add a LIMIT, or aggregate further.`
        : `The result is larger than ${limits.maxResultBytes} bytes: select fewer or smaller columns, or fewer rows.`,
      attr: 'query',
      cause: err,
    });
  }
  if (LIMIT_TYPES.has(err.type)) {
    return new AppError('query_limit_exceeded', {
      detail: `The query went past a limit of the run: ${message} (${err.type}). ${limitHint(err.type)}`,
      attr: 'query',
      cause: err,
    });
  }
  return new AppError('invalid_query', {
    detail: `ClickHouse refused the query: ${message} (${err.type})`,
    attr: 'query',
    cause: err,
  });
}

function limitHint(type: string): string {
  if (type === 'MEMORY_LIMIT_EXCEEDED')
    return 'Aggregate over fewer keys or a shorter time range, or use approximate functions (uniq, quantile).';
  return 'Make the query smaller.';
}

/** The first sentence(s) of the engine's message, without the query text it echoes. */
function clean(message: string): string {
  const text = message
    .replace(/^Code: \d+\. DB::Exception: /, '')
    .split(/(?::|\.)?\s*In scope\s/)[0]!
    .split(/\.\s+While processing\s/)[0]!
    .replace(/\s+/g, ' ')
    .trim();
  const cut = text.length > 500 ? `${text.slice(0, 500)}…` : text;
  return cut.replace(/[.:]\s*$/, '');
}
