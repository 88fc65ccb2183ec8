import type { HttpResponse, HttpRequest, TemplatedApp } from 'uWebSockets.js';
import type { Logger } from '../core/logger.ts';
import type { Metrics } from '../core/metrics.ts';
import { AppError } from '../errors/app-error.ts';
import type { InFlight } from '../http/in-flight.ts';
import { BodyTooLargeError, Reply, readBody, readHeaders, type Headers } from '../http/uws.ts';
import type { CaptureService } from './capture-service.ts';
import { MAX_WIRE_BYTES } from './limits.ts';

/** The capture paths (SPEC §2); each answers with and without a trailing slash. */
export const CAPTURE_PATHS = ['/i/v0/e', '/batch', '/e', '/capture', '/track', '/engage'] as const;

const POST_HEADERS = ['content-type', 'content-encoding', 'content-length', 'origin'];
const PREFLIGHT_HEADERS = ['origin', 'access-control-request-headers'];

/** The answer of an accepted request, made once. */
const OK_BODY = JSON.stringify({ status: 'Ok' });
const JSON_TYPE: Headers = Object.freeze({ 'Content-Type': 'application/json' });
const NO_HEADERS: Headers = Object.freeze({});

export interface CaptureRoutesDeps {
  readonly service: CaptureService;
  readonly inFlight: InFlight;
  readonly metrics: Metrics;
  readonly logger: Logger;
}

export function registerCaptureRoutes(app: TemplatedApp, deps: CaptureRoutesDeps): void {
  for (const path of CAPTURE_PATHS) {
    const route = path.slice(1);
    for (const pattern of [path, `${path}/`]) {
      app.post(pattern, (res, req) => handlePost(res, req, route, path === '/batch', deps));
      app.options(pattern, (res, req) => {
        const h = readHeaders(req, PREFLIGHT_HEADERS);
        new Reply(res).send(204, undefined, {
          ...corsHeaders(h['origin']!),
          'Access-Control-Allow-Headers':
            h['access-control-request-headers'] || 'Content-Type, Content-Encoding',
          'Access-Control-Max-Age': '86400',
        });
      });
      app.any(pattern, (res, req) => {
        const h = readHeaders(req, ['origin']);
        new Reply(res).error(new AppError('method_not_allowed', { detail: 'Capture takes POST only.' }), {
          Allow: 'POST, OPTIONS',
          ...corsHeaders(h['origin']!),
        });
      });
    }
  }
}

const EMPTY_QUERY = new URLSearchParams();

function corsHeaders(origin: string): Headers {
  return {
    'Access-Control-Allow-Origin': origin || '*',
    'Access-Control-Allow-Methods': 'POST, OPTIONS',
    'Access-Control-Allow-Credentials': origin ? 'true' : 'false',
    Vary: 'Origin',
  };
}

function handlePost(
  res: HttpResponse,
  req: HttpRequest,
  route: string,
  batchRoute: boolean,
  deps: CaptureRoutesDeps,
): void {
  const reply = new Reply(res);
  const h = readHeaders(req, POST_HEADERS);
  const rawQuery = req.getQuery();
  const query = rawQuery ? new URLSearchParams(rawQuery) : EMPTY_QUERY;
  // A browser sends Origin with every cross-origin request, and only then reads the CORS headers; server
  // SDKs send none, and their answers go without (five headers fewer on the hot path).
  const cors = h['origin'] ? corsHeaders(h['origin']) : NO_HEADERS;
  const started = performance.now();
  if (!deps.inFlight.accepting) {
    reply.error(
      new AppError('unavailable', { detail: 'Weir is shutting down.', retryAfterSeconds: 1 }),
      cors,
    );
    deps.metrics.captureRequests.inc({ route, status: 503 });
    return;
  }
  deps.inFlight.begin();
  const contentLength = h['content-length'] ? Number(h['content-length']) : undefined;
  // uWS wants the body handler attached before this function returns: readBody does that synchronously.
  const body = readBody(reply, contentLength, MAX_WIRE_BYTES);
  void answer(reply, body, h, query, cors, route, batchRoute, started, deps);
}

/**
 * The rest of a capture request, once its body is on the way. A function of its own rather than closures
 * made per request: at thousands of requests a second each function object made is felt.
 */
async function answer(
  reply: Reply,
  bodyRead: Promise<Buffer>,
  h: Record<string, string>,
  query: URLSearchParams,
  cors: Headers,
  route: string,
  batchRoute: boolean,
  started: number,
  deps: CaptureRoutesDeps,
): Promise<void> {
  let status: number;
  try {
    status = await capture(reply, bodyRead, h, query, cors, batchRoute, route, deps);
    deps.metrics.captureRequests.inc({ route, status });
    deps.metrics.captureDuration.observe({ route }, (performance.now() - started) / 1000);
  } catch (err) {
    deps.logger.error({ err }, 'capture handler failed');
  } finally {
    deps.inFlight.end();
  }
}

async function capture(
  reply: Reply,
  bodyRead: Promise<Buffer>,
  h: Record<string, string>,
  query: URLSearchParams,
  cors: Headers,
  batchRoute: boolean,
  route: string,
  deps: CaptureRoutesDeps,
): Promise<number> {
  let body: Buffer;
  try {
    body = await bodyRead;
  } catch (err) {
    if (err instanceof BodyTooLargeError) {
      reply.error(new AppError('payload_too_large', { detail: 'The body is larger than 20 MiB.' }), cors);
      return 413;
    }
    return 499; // the client went away; nothing was accepted
  }
  deps.metrics.captureBytes.inc(body.length);
  try {
    await deps.service.capture({
      body,
      contentType: h['content-type']!,
      contentEncoding: h['content-encoding']!,
      compression: (query.get('compression') ?? '').toLowerCase(),
      batchRoute,
      querySentAt: query.get('_') ?? undefined,
    });
  } catch (err) {
    const appError = reply.error(err, cors);
    // A refusal with no cause (bus unreachable, back-pressure, shutting down) is expected and counted in
    // the metrics; logging each would flood the log for the length of an outage.
    if (appError.status === 503 && appError.cause === undefined)
      deps.logger.debug({ route, detail: appError.message }, 'capture refused');
    else if (appError.status >= 500)
      deps.logger.warn({ err: appError.cause ?? appError, route, code: appError.code }, 'capture failed');
    return appError.status;
  }
  if (query.get('beacon') === '1') {
    reply.send(204, undefined, cors);
    return 204;
  }
  reply.send(200, OK_BODY, cors === NO_HEADERS ? JSON_TYPE : { ...JSON_TYPE, ...cors });
  return 200;
}
