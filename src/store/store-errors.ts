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
 * unable to write at all. Only these make an insert look for the rows at fault.
 */
const DATA_ERROR_CODES = new Set([
  6, 26, 27, 33, 38, 41, 53, 69, 70, 72, 73, 117, 131, 321, 376, 407, 441, 467, 468, 691,
]);

export function isDataError(err: unknown): boolean {
  const code = engineCode(err);
  return code !== undefined && DATA_ERROR_CODES.has(code);
}
