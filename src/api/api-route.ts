import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import type { Logger } from '../core/logger.ts';
import { AppError } from '../errors/app-error.ts';
import type { InFlight } from '../http/in-flight.ts';
import { BodyTooLargeError, Reply, readBody, readHeaders } from '../http/uws.ts';

/** Largest JSON body an API route reads. */
export const MAX_API_BODY_BYTES = 1024 * 1024;

export type ApiMethod = 'get' | 'post' | 'patch' | 'put' | 'del';

const HTTP_NAME: Readonly<Record<ApiMethod, string>> = {
  get: 'GET',
  post: 'POST',
  patch: 'PATCH',
  put: 'PUT',
  del: 'DELETE',
};
const WITH_BODY: ReadonlySet<ApiMethod> = new Set(['post', 'patch', 'put']);

/** One API request, read while uWS's `req` is still valid (it is gone after the first await). */
export interface ApiRequest {
  /** Path parameters in order (`:id` segments). */
  readonly params: readonly string[];
  readonly query: URLSearchParams;
  /** `Authorization` header value ('' when absent). */
  readonly authorization: string;
  /** The URL the client called, up to the path (`http://host:port`), from `Host` and `X-Forwarded-*`. */
  readonly origin: string;
  /** The JSON body, or undefined for an empty one (and on methods without a body). */
  readonly body: unknown;
}

type RequestHead = Omit<ApiRequest, 'body'>;

export interface ApiResponse {
  readonly status: number;
  /** Sent as JSON; none for 204. */
  readonly body?: unknown;
  /** A body already serialised as JSON, sent as it is (instead of `body`). */
  readonly json?: string;
}

export type ApiHandler = (request: ApiRequest) => ApiResponse | Promise<ApiResponse>;

export interface ApiRouteDeps {
  readonly inFlight: InFlight;
  readonly logger: Logger;
}

/**
 * Registers a JSON API route on uWS: `path` with and without its trailing slash, one handler per method,
 * 405 with `Allow` for the other methods. A handler returns a status and a body or throws an AppError;
 * this answers every error as SPEC §1 (401s with `WWW-Authenticate: Bearer`), logs 5xx, and counts the
 * request in flight so a graceful shutdown waits for it.
 */
export function apiRoute(
  app: TemplatedApp,
  deps: ApiRouteDeps,
  path: string,
  handlers: Partial<Record<ApiMethod, ApiHandler>>,
): void {
  const trimmed = path.replace(/\/$/, '');
  const paramCount = (path.match(/\/:/g) ?? []).length;
  const allow = (Object.keys(handlers) as ApiMethod[]).map((m) => HTTP_NAME[m]).join(', ');
  for (const pattern of [trimmed, `${trimmed}/`]) {
    for (const [method, handler] of Object.entries(handlers) as [ApiMethod, ApiHandler][]) {
      app[method](pattern, (res, req) => handle(res, req, paramCount, WITH_BODY.has(method), handler, deps));
    }
    app.any(pattern, (res) => {
      new Reply(res).error(
        new AppError('method_not_allowed', { detail: `This route takes ${allow} only.` }),
        { Allow: allow },
      );
    });
  }
}

function handle(
  res: HttpResponse,
  req: HttpRequest,
  paramCount: number,
  withBody: boolean,
  handler: ApiHandler,
  deps: ApiRouteDeps,
): void {
  const reply = new Reply(res);
  const headers = readHeaders(req, [
    'authorization',
    'content-length',
    'host',
    'x-forwarded-proto',
    'x-forwarded-host',
  ]);
  const params: string[] = [];
  for (let i = 0; i < paramCount; i++) params.push(decodeParam(req.getParameter(i) ?? ''));
  const query = new URLSearchParams(req.getQuery() ?? '');
  if (!deps.inFlight.accepting) {
    reply.error(new AppError('unavailable', { detail: 'Weir is shutting down.', retryAfterSeconds: 1 }));
    return;
  }
  deps.inFlight.begin();
  const contentLength = headers['content-length'] ? Number(headers['content-length']) : undefined;
  // uWS wants the body handler attached before this function returns.
  const body = withBody ? readBody(reply, contentLength, MAX_API_BODY_BYTES) : Promise.resolve(undefined);
  const head: RequestHead = {
    params,
    query,
    authorization: headers['authorization']!,
    origin: originOf(headers),
  };
  void respond(reply, body, head, handler, deps);
}

/**
 * Reads the body, runs the handler, answers. A function of its own rather than a closure made per request:
 * the hot routes (endpoint runs) pay for every function object they create.
 */
async function respond(
  reply: Reply,
  body: Promise<Buffer | undefined>,
  head: RequestHead,
  handler: ApiHandler,
  deps: ApiRouteDeps,
): Promise<void> {
  try {
    let json: unknown;
    try {
      json = parseJson(await body);
    } catch (err) {
      if (err instanceof BodyTooLargeError) {
        throw new AppError('payload_too_large', { detail: 'The body is larger than 1 MiB.' });
      }
      if (err instanceof AppError) throw err;
      return; // the client went away
    }
    const response = await handler({
      params: head.params,
      query: head.query,
      authorization: head.authorization,
      origin: head.origin,
      body: json,
    });
    if (response.status === 204) reply.send(204, undefined);
    else if (response.json !== undefined) {
      reply.send(response.status, response.json, JSON_TYPE);
    } else reply.json(response.status, response.body);
  } catch (err) {
    const appError = reply.error(err, err instanceof AppError && err.status === 401 ? WWW_AUTHENTICATE : {});
    if (appError.status >= 500) deps.logger.error({ err: appError.cause ?? appError }, 'api request failed');
  } finally {
    deps.inFlight.end();
  }
}

const JSON_TYPE = Object.freeze({ 'Content-Type': 'application/json' });
const WWW_AUTHENTICATE = { 'WWW-Authenticate': 'Bearer realm="weir"' };

/** Behind a proxy, the address the client used is in `X-Forwarded-Proto` / `X-Forwarded-Host`. */
function originOf(headers: Record<string, string>): string {
  const proto = headers['x-forwarded-proto']?.split(',')[0]?.trim() || 'http';
  const host = headers['x-forwarded-host']?.split(',')[0]?.trim() || headers['host'] || 'localhost';
  return `${proto === 'https' ? 'https' : 'http'}://${host}`;
}

function decodeParam(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw; // a malformed escape names nothing; the handler answers 404 for it
  }
}

function parseJson(body: Buffer | undefined): unknown {
  if (body === undefined || body.length === 0) return undefined;
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    throw new AppError('invalid_payload', { detail: 'The body is not valid JSON.' });
  }
}
