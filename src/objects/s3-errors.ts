import { ObjectStoreError, type ObjectStoreErrorKind } from '../core/object-store.ts';

/**
 * Converts what `@aws-sdk/client-s3` (and the HTTP layer under it) throws into the port's ObjectStoreError,
 * once, where it enters; nothing above the S3 adapter sees an SDK error, only its message and `cause`.
 */

/** Error names S3 uses for "no such object" (HeadObject has no body, so the SDK names it by status). */
const NOT_FOUND_NAMES = new Set(['NoSuchKey', 'NotFound']);

/** S3 errors that say "not now": throttling and the service's own trouble. */
const UNAVAILABLE_NAMES = new Set([
  'SlowDown',
  'ServiceUnavailable',
  'InternalError',
  'RequestTimeout',
  'RequestTimeTooSkewed',
  'TimeoutError',
  'ThrottlingException',
]);

/** Socket and name-resolution failures: the endpoint cannot be reached now. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'ERR_STREAM_PREMATURE_CLOSE',
]);

interface SdkErrorShape {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  $metadata?: { httpStatusCode?: unknown };
  cause?: unknown;
}

function kindOf(err: SdkErrorShape): ObjectStoreErrorKind {
  const name = typeof err.name === 'string' ? err.name : '';
  const code = typeof err.code === 'string' ? err.code : '';
  const status = typeof err.$metadata?.httpStatusCode === 'number' ? err.$metadata.httpStatusCode : undefined;
  // A missing bucket is a 404 too, but it is a misconfiguration, not an absent object: a writer that took it
  // for "no manifest yet" would carry on against nothing.
  if (name === 'NoSuchBucket') return 'failed';
  if (NOT_FOUND_NAMES.has(name) || status === 404) return 'not_found';
  if (UNAVAILABLE_NAMES.has(name) || NETWORK_CODES.has(code) || NETWORK_CODES.has(name)) return 'unavailable';
  if (status !== undefined && (status >= 500 || status === 429)) return 'unavailable';
  // A socket error arrives without a status; some are wrapped once more by the HTTP handler.
  if (status === undefined && err.cause && typeof err.cause === 'object' && err.cause !== err)
    return kindOf(err.cause) === 'unavailable' ? 'unavailable' : 'failed';
  return 'failed';
}

/** The port's error for `err`, thrown while doing `action` on `key` (or the bucket) of `bucket`. */
export function s3Error(
  err: unknown,
  bucket: string,
  key: string | undefined,
  action: string,
): ObjectStoreError {
  if (err instanceof ObjectStoreError) return err;
  const shape: SdkErrorShape = err !== null && typeof err === 'object' ? err : {};
  const kind = kindOf(shape);
  const what = key === undefined ? `bucket ${bucket}` : `object ${key} in bucket ${bucket}`;
  if (kind === 'not_found') return new ObjectStoreError('not_found', `no ${what}`, { key, cause: err });
  const name = typeof shape.name === 'string' && shape.name !== 'Error' ? `${shape.name}: ` : '';
  const message = typeof shape.message === 'string' && shape.message !== '' ? shape.message : String(err);
  const code = typeof shape.code === 'string' ? ` (${shape.code})` : '';
  return new ObjectStoreError(kind, `cannot ${action} ${what}: ${name}${message}${code}`, {
    key,
    cause: err,
  });
}
