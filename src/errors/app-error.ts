import { StoreUnavailable } from '../core/ports.ts';
import { ERROR_CODES, statusOf, type ErrorCode, type ErrorType } from './codes.ts';

export interface AppErrorOptions {
  /** A sentence for a person; defaults to the code's sentence in the table. */
  detail?: string;
  /** The offending field, when there is one. */
  attr?: string | null;
  /** Whether the same request may succeed later (drives Retry-After). @default false */
  retriable?: boolean;
  /** Seconds a client should wait before retrying (503 / 429). */
  retryAfterSeconds?: number;
  cause?: unknown;
}

/** The one error class of Weir: a stable code from the table, its status, and whether a retry can help. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly type: ErrorType;
  readonly status: number;
  readonly attr: string | null;
  readonly retriable: boolean;
  readonly retryAfterSeconds: number | undefined;

  constructor(code: ErrorCode, options: AppErrorOptions = {}) {
    super(options.detail ?? ERROR_CODES[code].detail, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.type = ERROR_CODES[code].type;
    this.status = statusOf(code);
    this.attr = options.attr ?? null;
    this.retriable = options.retriable ?? false;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

export interface ErrorBody {
  type: ErrorType;
  code: ErrorCode;
  detail: string;
  attr: string | null;
}

/**
 * Turns any thrown value into the SPEC §1 body. A foreign error becomes a 500 whose detail says nothing of
 * its cause (no stack, no secret): the cause goes to the log, not to the client. A store that cannot serve
 * now is a 503 with Retry-After.
 */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  // The store's own trouble is never a request's answer: the caller is told to come back.
  if (err instanceof StoreUnavailable)
    return new AppError('store_unavailable', {
      detail: err.message,
      retriable: true,
      retryAfterSeconds: err.retryAfterSeconds,
      cause: err,
    });
  return new AppError('server_error', { cause: err });
}

/** A thrown value as an Error (a rejection reason or a `cause` should be one); an Error is returned as it is. */
export function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

export function errorBody(err: AppError): ErrorBody {
  return { type: err.type, code: err.code, detail: err.message, attr: err.attr };
}
