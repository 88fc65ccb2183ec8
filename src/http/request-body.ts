import { AppError } from '../errors/app-error.ts';
import type { Ending, Reply } from './reply.ts';

export class BodyTooLargeError extends Error {}

/**
 * A refused body declared up to this size is read on and thrown away after the 413 (`drain`); past it,
 * reading stops (`stop`). Large enough for the bodies clients plausibly send by mistake (a 25 MiB batch),
 * small enough that a refused request costs little: at most this much, and only within uWS's 10 s.
 */
export const MAX_DRAIN_BYTES = 64 * 1024 * 1024;

/** uWS's parser takes a Content-Length of 1 to 9 digits and refuses (closes on) any other value. */
const MAX_CONTENT_LENGTH_DIGITS = 9;

/**
 * Reads the whole request body, refusing more than `maxBytes` (checked against Content-Length up front and
 * against the bytes as they arrive). `done` is called once, with the body or the error,
 * possibly before this returns (a Content-Length that is refused as it stands). The error is a
 * BodyTooLargeError, an AppError `invalid_request` (a Content-Length that is not a length), or an Error when
 * the client goes away. On a refusal the reply already knows how the connection is to end (`Ending`): the
 * caller only answers. With `isView` the body is a view of uWS's own memory, valid only until `done`
 * returns: copy what must outlive it. A body in one chunk (most are) is then never copied.
 *
 * `contentLength` is the header as uWS gives it (trimmed; '' when absent).
 */
export function onBody(
  reply: Reply,
  contentLength: string,
  maxBytes: number,
  done: (err: Error | undefined, body: Buffer, isView: boolean) => void,
): void {
  if (contentLength !== '') {
    const declared = declaredLength(contentLength);
    if (!(declared <= maxBytes)) {
      refuseDeclared(reply, contentLength, declared, maxBytes, done);
      return;
    }
  }
  let settled = false;
  reply.onAbort(() => {
    if (settled) return;
    settled = true;
    done(new Error('client aborted the request'), EMPTY, false);
  });
  let chunks: Buffer[] | undefined;
  let size = 0;
  reply.res.onData((chunk, isLast) => {
    if (settled) return;
    size += chunk.byteLength;
    if (size > maxBytes) {
      settled = true;
      // A body without a length (chunked) can go on for ever: stop reading it.
      reply.endConnection('stop');
      done(new BodyTooLargeError(), EMPTY, false);
      return;
    }
    if (isLast && chunks === undefined) {
      settled = true;
      done(undefined, Buffer.from(chunk), true);
      return;
    }
    (chunks ??= []).push(Buffer.from(Buffer.from(chunk)));
    if (isLast) {
      settled = true;
      done(undefined, Buffer.concat(chunks, size), false);
    }
  });
}

/**
 * How the connection ends when a request is refused on its headers alone, its body unread: as a body
 * refused for its declared size (drained up to MAX_DRAIN_BYTES, else not read; nothing to do for an empty
 * one), and at once for a Content-Length uWS's parser refuses.
 */
export function endingBeforeBody(contentLength: string): Ending {
  if (contentLength === '') return 'stop';
  const declared = declaredLength(contentLength);
  if (Number.isNaN(declared)) return 'now';
  if (declared === 0) return 'keep';
  return declared <= MAX_DRAIN_BYTES ? 'drain' : 'stop';
}

/** A Content-Length of 1-9 digits as a number; NaN for anything else (uWS refuses it: see below). */
function declaredLength(raw: string): number {
  const n = raw.length;
  if (n > MAX_CONTENT_LENGTH_DIGITS) return Number.NaN;
  let value = 0;
  for (let i = 0; i < n; i++) {
    const digit = raw.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return Number.NaN;
    value = value * 10 + digit;
  }
  return value;
}

/**
 * Refuses a body by its Content-Length alone. A length over the bound is answered 413 and the body drained
 * or not read (`Ending`); a value uWS's parser refuses (not digits, negative, more than 9 digits: 10^9 bytes
 * or more) is answered at once, 400 or 413, before uWS closes the connection on it.
 */
function refuseDeclared(
  reply: Reply,
  raw: string,
  declared: number,
  maxBytes: number,
  done: (err: Error | undefined, body: Buffer, isView: boolean) => void,
): void {
  if (!Number.isNaN(declared)) {
    reply.endConnection(declared <= MAX_DRAIN_BYTES ? 'drain' : 'stop');
    done(new BodyTooLargeError(), EMPTY, false);
    return;
  }
  reply.endConnection('now');
  if (/^\d+$/.test(raw) && Number(raw) > maxBytes) {
    done(new BodyTooLargeError(), EMPTY, false);
    return;
  }
  done(
    new AppError('invalid_request', {
      detail: `Content-Length '${raw.slice(0, 40)}' is not a length Weir takes: 1 to 9 digits, nothing else.`,
      attr: 'Content-Length',
    }),
    EMPTY,
    false,
  );
}

const EMPTY = Buffer.alloc(0);
