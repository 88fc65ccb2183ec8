import type { HttpRequest, HttpResponse, HttpApp } from '../http/transport.ts';
import type { Logger } from '../core/logger.ts';
import { AppError } from '../errors/app-error.ts';
import type { InFlight } from '../http/in-flight.ts';
import { BodyTooLargeError, onBody } from '../http/request-body.ts';
import { sendPieces, type BodyPieces } from '../http/streamed-body.ts';
import { Reply } from '../http/reply.ts';
import type { ResponseMemo } from './response-memo.ts';

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
  /** `If-Match` header value ('' when absent): the ETag(s) a change is conditional on. */
  readonly ifMatch: string;
  /** The URL the client called, up to the path (`http://host:port`), from `Host` and `X-Forwarded-*`. */
  readonly origin: string;
  /** The JSON body, or undefined for an empty one (and on methods without a body). */
  readonly body: unknown;
}

export interface ApiResponse {
  readonly status: number;
  /** Sent as JSON; none for 204. */
  readonly body?: unknown;
  /** A body already serialised as JSON, sent as it is (instead of `body`). */
  readonly json?: string | Buffer;
  /** Headers sent with the answer (an `ETag`). */
  readonly headers?: Readonly<Record<string, string>>;
  /** A body that is not JSON, sent as it is with its content type (instead of `body` or `json`). */
  readonly bytes?: { readonly data: Buffer; readonly contentType: string };
  /** A 200 body made a piece at a time and written as the client takes it (instead of the others). */
  readonly pieces?: { readonly next: BodyPieces; readonly contentType: string };
  /**
   * For a 200 with `json` bytes on a route with a memo: while this returns true, the same request (same
   * method, path, query, `Authorization` and body) gets these same bytes, and the memo sends them again
   * without calling the handler.
   */
  readonly holds?: () => boolean;
}

export type ApiHandler = (request: ApiRequest) => ApiResponse | Promise<ApiResponse>;

export interface ApiRouteDeps {
  readonly inFlight: InFlight;
  readonly logger: Logger;
}

export interface ApiRouteOptions {
  /** Remembers the answers handlers mark with `holds`, by request (response-memo.ts). */
  readonly memo?: ResponseMemo;
  /** Largest body the route reads. @default MAX_API_BODY_BYTES */
  readonly maxBodyBytes?: number;
}

/**
 * Registers a JSON API route on uWS: `path` with and without its trailing slash, one handler per method,
 * 405 with `Allow` for the other methods. A handler returns a status and a body or throws an AppError;
 * this answers every error as SPEC §1 (401s with `WWW-Authenticate: Bearer`), logs 5xx, and counts the
 * request in flight so a graceful shutdown waits for it. With a memo, a request it remembers an answer for is
 * answered from it before the body is even parsed.
 */
export function apiRoute(
  app: HttpApp,
  deps: ApiRouteDeps,
  path: string,
  handlers: Partial<Record<ApiMethod, ApiHandler>>,
  options: ApiRouteOptions = {},
): void {
  const trimmed = path.replace(/\/$/, '');
  const paramCount = (path.match(/\/:/g) ?? []).length;
  const allow = (Object.keys(handlers) as ApiMethod[]).map((m) => HTTP_NAME[m]).join(', ');
  for (const pattern of [trimmed, `${trimmed}/`]) {
    for (const [method, handler] of Object.entries(handlers) as [ApiMethod, ApiHandler][]) {
      const route: Route = {
        method,
        paramCount,
        withBody: WITH_BODY.has(method),
        handler,
        memo: options.memo,
        maxBodyBytes: options.maxBodyBytes ?? MAX_API_BODY_BYTES,
      };
      app[method](pattern, (res, req) => handle(res, req, route, deps));
    }
    app.any(pattern, (res) => {
      new Reply(res).error(
        new AppError('method_not_allowed', { detail: `This route takes ${allow} only.` }),
        { Allow: allow },
      );
    });
  }
}

interface Route {
  readonly method: ApiMethod;
  readonly paramCount: number;
  readonly withBody: boolean;
  readonly handler: ApiHandler;
  readonly memo: ResponseMemo | undefined;
  readonly maxBodyBytes: number;
}

function handle(res: HttpResponse, req: HttpRequest, route: Route, deps: ApiRouteDeps): void {
  const reply = new Reply(res);
  if (!deps.inFlight.accepting) {
    reply.error(new AppError('unavailable', { detail: 'Weir is shutting down.', retryAfterSeconds: 1 }));
    return;
  }
  const rawQuery = req.getQuery() ?? '';
  const authorization = req.getHeader('authorization');
  const memo = route.memo;
  const url = memo === undefined ? '' : req.getUrl();
  // Without a body, the request is all here: its memo key is known at once.
  const headKey =
    memo === undefined || route.withBody
      ? undefined
      : memo.key(route.method, url, rawQuery, authorization, undefined);
  if (headKey !== undefined && answeredFromMemo(reply, memo!, headKey)) return;
  const params: string[] = [];
  for (let i = 0; i < route.paramCount; i++) params.push(decodeParam(req.getParameter(i) ?? ''));
  const request = new Request(
    params,
    rawQuery ? new URLSearchParams(rawQuery) : NO_QUERY,
    authorization,
    req.getHeader('if-match'),
    req.getHeader('host'),
    req.getHeader('x-forwarded-proto'),
    req.getHeader('x-forwarded-host'),
  );
  deps.inFlight.begin();
  if (!route.withBody) {
    answer(reply, request, route, deps, headKey);
    return;
  }
  // uWS wants the body handler attached before this function returns; it answers from uWS's callback.
  onBody(reply, req.getHeader('content-length'), route.maxBodyBytes, (err, body) => {
    if (err) {
      if (err instanceof BodyTooLargeError) {
        const mib = route.maxBodyBytes / (1024 * 1024);
        fail(
          reply,
          new AppError('payload_too_large', { detail: `The body is larger than ${mib} MiB.` }),
          deps,
        );
      } else if (err instanceof AppError) fail(reply, err, deps);
      // else the client went away: there is no one to answer
      deps.inFlight.end();
      return;
    }
    const memoKey = memo?.key(route.method, url, rawQuery, authorization, body);
    if (memoKey !== undefined && answeredFromMemo(reply, memo!, memoKey)) {
      deps.inFlight.end();
      return;
    }
    try {
      request.body = parseJson(body);
    } catch (parseError) {
      fail(reply, parseError, deps);
      deps.inFlight.end();
      return;
    }
    answer(reply, request, route, deps, memoKey);
  });
}

/** Sends the answer the memo holds for `key`, if it still holds: true when it did. */
function answeredFromMemo(reply: Reply, memo: ResponseMemo, key: string): boolean {
  const hit = memo.get(key);
  if (hit === undefined) return false;
  reply.send(200, hit, JSON_TYPE);
  return true;
}

/**
 * Runs the handler and answers. An answer the handler has at once (a cached endpoint run) is sent at once,
 * inside uWS's callback: no promise, no tick. Functions of their own rather than closures made per request,
 * as the hot routes pay for every function object they create.
 */
function answer(
  reply: Reply,
  request: Request,
  route: Route,
  deps: ApiRouteDeps,
  memoKey: string | undefined,
): void {
  let response: ApiResponse | Promise<ApiResponse>;
  try {
    response = route.handler(request);
  } catch (err) {
    fail(reply, err, deps);
    deps.inFlight.end();
    return;
  }
  if (response instanceof Promise) {
    response.then(
      (r) => sendResponse(reply, r, deps, route, memoKey),
      (err: unknown) => {
        fail(reply, err, deps);
        deps.inFlight.end();
      },
    );
  } else sendResponse(reply, response, deps, route, memoKey);
}

function sendResponse(
  reply: Reply,
  response: ApiResponse,
  deps: ApiRouteDeps,
  route: Route,
  memoKey: string | undefined,
): void {
  if (memoKey !== undefined && response.holds && response.status === 200 && response.json instanceof Buffer) {
    route.memo!.set(memoKey, { json: response.json, holds: response.holds });
  }
  if (response.pieces !== undefined) {
    sendBodyPieces(reply, response, response.pieces, deps);
    return;
  }
  try {
    const headers = response.headers;
    if (response.status === 204) reply.send(204, undefined, headers);
    else if (response.json !== undefined)
      reply.send(response.status, response.json, headers ? { ...JSON_TYPE, ...headers } : JSON_TYPE);
    else if (response.bytes !== undefined)
      reply.send(response.status, response.bytes.data, {
        'Content-Type': response.bytes.contentType,
        ...headers,
      });
    else reply.json(response.status, response.body, headers);
  } catch (err) {
    fail(reply, err, deps); // e.g. a body JSON cannot write
  } finally {
    deps.inFlight.end();
  }
}

/** Sends a body made a piece at a time; the request stays in flight until it is all written. */
function sendBodyPieces(
  reply: Reply,
  response: ApiResponse,
  pieces: NonNullable<ApiResponse['pieces']>,
  deps: ApiRouteDeps,
): void {
  try {
    sendPieces(reply, { 'Content-Type': pieces.contentType, ...response.headers }, pieces.next, (err) => {
      if (err !== undefined) deps.logger.error({ err }, 'api answer cut short: a piece of it failed');
      deps.inFlight.end();
    });
  } catch (err) {
    fail(reply, err, deps); // the first piece failed: nothing was sent yet
    deps.inFlight.end();
  }
}

/** Answers an error as SPEC §1 (401s with `WWW-Authenticate`), and logs a 5xx. */
function fail(reply: Reply, err: unknown, deps: ApiRouteDeps): void {
  const appError = reply.error(err, err instanceof AppError && err.status === 401 ? WWW_AUTHENTICATE : {});
  if (appError.status >= 500) deps.logger.error({ err: appError.cause ?? appError }, 'api request failed');
}

/** An ApiRequest; `origin` is worked out only by the routes that read it. */
class Request implements ApiRequest {
  body: unknown = undefined;
  #origin: string | undefined;

  constructor(
    readonly params: readonly string[],
    readonly query: URLSearchParams,
    readonly authorization: string,
    readonly ifMatch: string,
    private readonly host: string,
    private readonly forwardedProto: string,
    private readonly forwardedHost: string,
  ) {}

  /** Behind a proxy, the address the client used is in `X-Forwarded-Proto` / `X-Forwarded-Host`. */
  get origin(): string {
    if (this.#origin === undefined) {
      const proto = this.forwardedProto.split(',')[0]?.trim() || 'http';
      const host = this.forwardedHost.split(',')[0]?.trim() || this.host || 'localhost';
      this.#origin = `${proto === 'https' ? 'https' : 'http'}://${host}`;
    }
    return this.#origin;
  }
}

/** The query of a request without one; handlers only read it. */
const NO_QUERY = new URLSearchParams();

const JSON_TYPE = Object.freeze({ 'Content-Type': 'application/json' });
const WWW_AUTHENTICATE = { 'WWW-Authenticate': 'Bearer realm="weir"' };

function decodeParam(raw: string): string {
  if (!raw.includes('%')) return raw;
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
