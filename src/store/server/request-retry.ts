import type { Logger } from '../../core/logger.ts';
import { AppError } from '../../errors/app-error.ts';
import { engineCode, toStoreQueryError } from '../store-errors.ts';

/**
 * Codes of a connection that failed with nothing done, or with the answer lost: a keep-alive socket the
 * server had closed (the first request after an idle spell meets it), a server restarting.
 */
const CONNECTION_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ECONNABORTED']);
/** Connection failures a retry cannot mend soon, reported as the server being unreachable. */
const UNREACHABLE_CODES = new Set(['EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT']);

/**
 * Engine errors after which an insert may be sent again: the server was busy or lost its coordination for a
 * moment, and the block may or may not have been stored (319 says so outright). The retry carries the same
 * deduplication token, so a block stored the first time is not stored again.
 */
const RETRIABLE_INSERT_CODES = new Set([
  3, // UNEXPECTED_END_OF_FILE: the body was cut off on the way
  202, // TOO_MANY_SIMULTANEOUS_QUERIES
  209, // SOCKET_TIMEOUT
  210, // NETWORK_ERROR
  242, // TABLE_IS_READ_ONLY: a replica that lost Keeper for a moment
  252, // TOO_MANY_PARTS: merges behind
  319, // UNKNOWN_STATUS_OF_INSERT
  425, // SYSTEM_ERROR
  999, // KEEPER_EXCEPTION
]);

/** Waits before the second, third and fourth try; the last failure stands. */
const RETRY_DELAYS_MS = [100, 300, 1000];

export interface RequestRetryConfig {
  /** Waits before each try after the first. @default [100, 300, 1000] */
  readonly delaysMs?: readonly number[];
}

/**
 * Runs a request to the ClickHouse server, tries it again after a failure that a retry can mend, and
 * converts its final failure once, at the store's edge: the engine's refusal as a StoreQueryError (the same
 * shape as the embedded store's), a server that cannot be reached as AppError `unavailable` (503 with
 * Retry-After, as an unreachable store owner is for a query node), a server that did not answer within the
 * request timeout as AppError `timeout`.
 *
 * A read or a statement is tried again only after a connection failure (nothing ran, or the answer was
 * lost: reading again is harmless, and every statement Weir sends is idempotent). An insert is tried again
 * after those and after the engine errors above, under the same deduplication token.
 */
export class RequestRetry {
  readonly #logger: Logger;
  readonly #delays: readonly number[];

  constructor(config: RequestRetryConfig, deps: { readonly logger: Logger }) {
    this.#logger = deps.logger;
    this.#delays = config.delaysMs ?? RETRY_DELAYS_MS;
  }

  async run<T>(
    what: string,
    work: () => Promise<T>,
    options: { readonly insert?: boolean } = {},
  ): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await work();
      } catch (err) {
        const again =
          isConnectionFault(err) ||
          (options.insert === true && RETRIABLE_INSERT_CODES.has(engineCode(err) ?? -1));
        if (!again || attempt >= this.#delays.length) throw this.#converted(err);
        this.#logger.warn({ err, what, attempt: attempt + 1 }, 'ClickHouse request failed; trying it again');
        await new Promise((resolve) => setTimeout(resolve, this.#delays[attempt]));
      }
    }
  }

  #converted(err: unknown): unknown {
    const refused = toStoreQueryError(err);
    if (refused !== err) return refused;
    const code = (err as { code?: unknown }).code;
    if (isConnectionFault(err) || (typeof code === 'string' && UNREACHABLE_CODES.has(code)))
      return new AppError('unavailable', {
        detail: `The ClickHouse server cannot be reached (${describe(err)}); retry after the time in Retry-After.`,
        retryAfterSeconds: 1,
        retriable: true,
        cause: err,
      });
    if (err instanceof Error && err.message === 'Timeout error.')
      return new AppError('timeout', {
        detail: 'The ClickHouse server did not answer within the time allowed.',
        cause: err,
      });
    return err;
  }
}

function isConnectionFault(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  return (typeof code === 'string' && CONNECTION_CODES.has(code)) || /socket hang up/i.test(err.message);
}

function describe(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  const message = err instanceof Error ? err.message : String(err);
  return typeof code === 'string' && !message.includes(code) ? `${message}, ${code}` : message;
}
