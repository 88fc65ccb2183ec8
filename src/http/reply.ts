import { STATUS_CODES } from 'node:http';
import type { HttpRequest, HttpResponse } from './transport.ts';
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
  409: '409 Conflict',
  413: '413 Payload Too Large',
  415: '415 Unsupported Media Type',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
  504: '504 Gateway Timeout',
};

export type Headers = Readonly<Record<string, string>>;

/**
 * How the connection goes on after the answer. `keep`: the request was read whole; the connection serves
 * the next one. The others are for a request refused before its body was read (request-body.ts), answered
 * with `Connection: close`:
 * - `drain`: uWS reads the declared body on and throws it away, so that a client that reads only once it has
 *   sent everything still gets the answer; its idle timeout (10 s after the answer, not extended by bytes
 *   thrown away) closes the connection if the client does not.
 * - `stop`: reading stops (a body too large to drain, or one still streaming); the client can read the
 *   answer while its writes stall, and the same idle timeout closes the connection.
 * - `now`: uWS refuses the request's framing itself right after the handler, closing the connection and
 *   dropping what the handler wrote to its cork buffer. An answer longer than that buffer (16 KiB) is
 *   written to the socket at once, so the refusal is padded past it and the connection closed after it.
 */
export type Ending = 'keep' | 'drain' | 'stop' | 'now';

/** Longer than uWS's cork buffer (LoopData::CORK_BUFFER_SIZE, 16 KiB): such a write goes out at once. */
const PAST_CORK_BUFFER = 16 * 1024 + 1;

/**
 * One request's response side. uWS invalidates `res` once the client goes away, so every write checks
 * `aborted`; writes after an await are corked (one syscall) as uWS requires; a large body waits for the
 * socket to drain (`onWritable`) instead of buffering without bound.
 */
export class Reply {
  aborted = false;
  done = false;
  #onAbort: (() => void) | undefined;
  #ending: Ending = 'keep';

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

  /** How the connection ends after the answer (see `Ending`); set when a body is refused unread. */
  endConnection(ending: Ending): void {
    this.#ending = ending;
  }

  send(status: number, body: string | Buffer | undefined, headers: Headers = {}): void {
    if (this.aborted || this.done) return;
    this.done = true;
    const res = this.res;
    const ending = this.#ending;
    res.cork(() => {
      if (ending === 'stop') res.pause();
      res.writeStatus(STATUS_TEXT[status] ?? `${status} ${STATUS_CODES[status] ?? ''}`.trimEnd());
      for (const name in headers) res.writeHeader(name, headers[name]!);
      if (ending === 'now') {
        res.end(padded(body), true);
        return;
      }
      // uWS's own close would close at once, with the body unread: the client would get a reset, not this.
      if (ending !== 'keep') res.writeHeader('Connection', 'close');
      if (body === undefined || body.length < 64 * 1024) {
        res.end(body);
        return;
      }
      const data = typeof body === 'string' ? Buffer.from(body) : body;
      const total = data.length;
      // The offset before the body: a tryEnd that is held back has sent part of it, and the rest starts at
      // what the socket took since this offset (taken after, it would send the body's start again).
      const start = res.getWriteOffset();
      const [ok, finished] = res.tryEnd(data, total);
      if (ok || finished) return;
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
    this.send(appError.status, JSON.stringify(errorBody(appError)), {
      'Content-Type': 'application/json',
      ...extra,
    });
    return appError;
  }
}

/** A body padded with trailing spaces (still the same JSON) past uWS's cork buffer. */
function padded(body: string | Buffer | undefined): string {
  const text = body === undefined ? '' : body.toString();
  return text.length >= PAST_CORK_BUFFER ? text : text.padEnd(PAST_CORK_BUFFER, ' ');
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

/** The request headers a handler needs, read synchronously (uWS's `req` is gone after the first await). */
export function readHeaders(req: HttpRequest, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) out[name] = req.getHeader(name);
  return out;
}
