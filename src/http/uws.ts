import { STATUS_CODES } from 'node:http';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { AppError, errorBody, toAppError } from '../errors/app-error.ts';

const STATUS_TEXT: Readonly<Record<number, string>> = {
  200: '200 OK',
  201: '201 Created',
  204: '204 No Content',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  413: '413 Payload Too Large',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
  504: '504 Gateway Timeout',
};

export type Headers = Readonly<Record<string, string>>;

/**
 * One request's response side. uWS invalidates `res` once the client goes away, so every write checks
 * `aborted`; writes after an await are corked (one syscall) as uWS requires; a large body waits for the
 * socket to drain (`onWritable`) instead of buffering without bound.
 */
export class Reply {
  aborted = false;
  done = false;
  #onAbort: (() => void) | undefined;

  constructor(readonly res: HttpResponse) {
    res.onAborted(() => {
      this.aborted = true;
      this.#onAbort?.();
    });
  }

  /** Called once if the client disconnects before the response is sent. */
  onAbort(handler: () => void): void {
    this.#onAbort = handler;
  }

  send(
    status: number,
    body: string | Buffer | undefined,
    headers: Headers = {},
    closeConnection = false,
  ): void {
    if (this.aborted || this.done) return;
    this.done = true;
    const res = this.res;
    res.cork(() => {
      res.writeStatus(STATUS_TEXT[status] ?? `${status} ${STATUS_CODES[status] ?? ''}`.trimEnd());
      for (const name in headers) res.writeHeader(name, headers[name]!);
      if (body === undefined || body.length < 64 * 1024) {
        res.end(body, closeConnection);
        return;
      }
      const data = typeof body === 'string' ? Buffer.from(body) : body;
      const total = data.length;
      const [ok, finished] = res.tryEnd(data, total);
      if (ok || finished) return;
      const start = res.getWriteOffset();
      res.onWritable((offset) => {
        const [ok2, finished2] = res.tryEnd(data.subarray(offset - start), total);
        return ok2 || finished2;
      });
    });
  }

  /** Sends an answer made once (see `FixedAnswer`). */
  sendFixed(answer: FixedAnswer): void {
    if (this.aborted || this.done) return;
    this.done = true;
    const res = this.res;
    res.cork(() => {
      res.writeStatus(answer.status);
      for (const [name, value] of answer.headers) res.writeHeader(name, value);
      res.end(answer.body);
    });
  }

  json(status: number, value: unknown, headers: Headers = {}): void {
    this.send(status, JSON.stringify(value), { 'Content-Type': 'application/json', ...headers });
  }

  error(err: unknown, headers: Headers = {}): AppError {
    const appError = toAppError(err);
    const extra: Record<string, string> = { ...headers };
    if (appError.retryAfterSeconds !== undefined) extra['Retry-After'] = String(appError.retryAfterSeconds);
    // A 413 answered before the body was read leaves unread bytes on the connection: close it.
    this.send(
      appError.status,
      JSON.stringify(errorBody(appError)),
      { 'Content-Type': 'application/json', ...extra },
      appError.status === 413,
    );
    return appError;
  }
}

/**
 * An answer sent as it is to many requests (capture's `200 {"status":"Ok"}`), its status line, headers and
 * body encoded as UTF-8 once: uWS takes bytes as they are, where it converts each string it is given (a
 * UTF-8 length and a copy per call, ~1% of capture's main thread in a `perf` profile at 38,000 requests/s).
 */
export class FixedAnswer {
  readonly status: Buffer;
  readonly headers: readonly (readonly [Buffer, Buffer])[];
  readonly body: Buffer;

  constructor(status: number, headers: Headers, body: string) {
    this.status = Buffer.from(STATUS_TEXT[status] ?? `${status} ${STATUS_CODES[status] ?? ''}`.trimEnd());
    this.headers = Object.entries(headers).map(([name, value]) => [Buffer.from(name), Buffer.from(value)]);
    this.body = Buffer.from(body);
  }
}

export class BodyTooLargeError extends Error {}

/**
 * Reads the whole request body, refusing more than `maxBytes` (checked against Content-Length up front and
 * against the bytes as they arrive). uWS hands chunks as ArrayBuffers that die after the callback: copy them.
 */
export function readBody(reply: Reply, contentLength: number | undefined, maxBytes: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    onBody(reply, contentLength, maxBytes, (err, body, isView) => {
      if (err) reject(err);
      else resolve(isView ? Buffer.from(body) : body);
    });
  });
}

/**
 * `readBody` for a handler that reads the body at once: `done` is called once, with the body or the error
 * (BodyTooLargeError, or an Error when the client goes away), possibly before this returns (a Content-Length
 * over the bound). With `isView` the body is a view of uWS's own memory, valid only until `done` returns:
 * copy what must outlive it. A body in one chunk (most are) is then never copied.
 */
export function onBody(
  reply: Reply,
  contentLength: number | undefined,
  maxBytes: number,
  done: (err: Error | undefined, body: Buffer, isView: boolean) => void,
): void {
  if (contentLength !== undefined && contentLength > maxBytes) {
    done(new BodyTooLargeError(), EMPTY, false);
    return;
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

const EMPTY = Buffer.alloc(0);

/** The request headers a handler needs, read synchronously (uWS's `req` is gone after the first await). */
export function readHeaders(req: HttpRequest, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) out[name] = req.getHeader(name);
  return out;
}
