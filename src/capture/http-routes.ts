import type { HttpResponse, HttpRequest, HttpApp } from '../http/transport.ts';
import type { Logger } from '../core/logger.ts';
import type { Metrics, Tally } from '../core/metrics.ts';
import { AppError } from '../errors/app-error.ts';
import { corsHeaders, preflightHeaders } from '../http/cors.ts';
import type { InFlight } from '../http/in-flight.ts';
import { BodyTooLargeError, onBody } from '../http/request-body.ts';
import { FixedAnswer, Reply, readHeaders, type Headers } from '../http/reply.ts';
import type { CaptureService } from './capture-service.ts';
import { readClient, type ClientSeen } from './client-address.ts';
import { MAX_WIRE_BYTES } from './limits.ts';

/** The capture paths (SPEC §2); each answers with and without a trailing slash. */
export const CAPTURE_PATHS = ['/i/v0/e', '/batch', '/e', '/capture', '/track', '/engage'] as const;

const PREFLIGHT_HEADERS = ['origin', 'access-control-request-headers'];

/** The answer of an accepted request, made once. */
const OK_BODY = JSON.stringify({ status: 'Ok' });
const JSON_TYPE: Headers = Object.freeze({ 'Content-Type': 'application/json' });
const NO_HEADERS: Headers = Object.freeze({});
/** The answer of an accepted request without CORS (server SDKs), made once. */
const OK_ANSWER = new FixedAnswer(200, JSON_TYPE, OK_BODY);

/** A capture request's headers: the four it reads, in one shape. */
interface CaptureHeaders {
  readonly contentType: string;
  readonly contentEncoding: string;
  readonly contentLength: string;
  readonly origin: string;
}

// Header names as bytes: uWS converts a string name to UTF-8 at every call (see FixedAnswer).
const CONTENT_TYPE = Buffer.from('content-type');
const CONTENT_ENCODING = Buffer.from('content-encoding');
const CONTENT_LENGTH = Buffer.from('content-length');
const ORIGIN = Buffer.from('origin');

function captureHeaders(req: HttpRequest): CaptureHeaders {
  return {
    contentType: req.getHeader(CONTENT_TYPE),
    contentEncoding: req.getHeader(CONTENT_ENCODING),
    contentLength: req.getHeader(CONTENT_LENGTH),
    origin: req.getHeader(ORIGIN),
  };
}

export interface CaptureRoutesDeps {
  readonly service: CaptureService;
  readonly inFlight: InFlight;
  readonly metrics: Metrics;
  readonly logger: Logger;
}

/** A route's request counts by status, and the labels of its duration: made once, not per request. */
export class RouteMetrics {
  readonly #byStatus = new Map<number, Tally>();
  /** The route's duration histogram, its labels bound once (no closure made per observation). */
  readonly duration: { observe(seconds: number): void };

  constructor(
    readonly route: string,
    readonly metrics: Metrics,
  ) {
    this.duration = metrics.captureDuration.labels({ route });
  }

  requests(status: number): Tally {
    let tally = this.#byStatus.get(status);
    if (!tally) {
      tally = this.metrics.tally(this.metrics.captureRequests, { route: this.route, status });
      this.#byStatus.set(status, tally);
    }
    return tally;
  }
}

export function registerCaptureRoutes(app: HttpApp, deps: CaptureRoutesDeps): void {
  for (const path of CAPTURE_PATHS) {
    const route = new RouteMetrics(path.slice(1), deps.metrics);
    for (const pattern of [path, `${path}/`]) {
      app.post(pattern, (res, req) => handlePost(res, req, route, path === '/batch', deps));
      app.options(pattern, (res, req) => {
        const h = readHeaders(req, PREFLIGHT_HEADERS);
        new Reply(res).send(
          204,
          undefined,
          preflightHeaders(h['origin']!, h['access-control-request-headers']!, 'POST, OPTIONS'),
        );
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

function handlePost(
  res: HttpResponse,
  req: HttpRequest,
  route: RouteMetrics,
  batchRoute: boolean,
  deps: CaptureRoutesDeps,
): void {
  const reply = new Reply(res);
  const h = captureHeaders(req);
  const rawQuery = req.getQuery();
  const query = rawQuery ? new URLSearchParams(rawQuery) : EMPTY_QUERY;
  // A browser sends Origin with every cross-origin request, and only then reads the CORS headers; server
  // SDKs send none, and their answers go without (five headers fewer on the hot path).
  const cors = h.origin ? corsHeaders(h.origin) : NO_HEADERS;
  if (!deps.inFlight.accepting) {
    reply.error(
      new AppError('unavailable', { detail: 'Weir is shutting down.', retryAfterSeconds: 1 }),
      cors,
    );
    route.requests(503).add();
    return;
  }
  deps.inFlight.begin();
  const call = new CaptureCall(reply, h, readClient(res, req), query, cors, route, batchRoute, deps);
  // uWS wants the body handler attached before this function returns: onBody does that synchronously.
  onBody(reply, h.contentLength, MAX_WIRE_BYTES, (err, body, isView) => call.bodyRead(err, body, isView));
}

/**
 * One capture request from its body on. Callbacks rather than async functions: a single-event request is
 * decoded, checked and handed to the bus synchronously in the body's callback, and waits on one promise,
 * the bus's; at tens of thousands of requests a second each promise and async frame is felt.
 */
class CaptureCall {
  readonly #started = performance.now();
  #ended = false;

  constructor(
    readonly reply: Reply,
    readonly headers: CaptureHeaders,
    readonly client: ClientSeen,
    readonly query: URLSearchParams,
    readonly cors: Headers,
    readonly route: RouteMetrics,
    readonly batchRoute: boolean,
    readonly deps: CaptureRoutesDeps,
  ) {}

  bodyRead(err: Error | undefined, body: Buffer, isView: boolean): void {
    try {
      this.#bodyRead(err, body, isView);
    } catch (fault) {
      this.#failed(fault);
    }
  }

  #bodyRead(err: Error | undefined, body: Buffer, isView: boolean): void {
    if (err) {
      if (err instanceof BodyTooLargeError) {
        this.reply.error(
          new AppError('payload_too_large', { detail: 'The body is larger than 20 MiB.' }),
          this.cors,
        );
        this.#end(413);
      } else if (err instanceof AppError) {
        this.#end(this.reply.error(err, this.cors).status);
      } else this.#end(499); // the client went away; nothing was accepted
      return;
    }
    this.deps.metrics.captureBytes.inc(body.length);
    let published: Promise<void>;
    try {
      published = this.deps.service.capture({
        // A view of uWS's memory lives only until this callback returns; a large gzip body is inflated later.
        body: isView ? Buffer.from(body) : body,
        contentType: this.headers.contentType,
        contentEncoding: this.headers.contentEncoding,
        compression: (this.query.get('compression') ?? '').toLowerCase(),
        batchRoute: this.batchRoute,
        querySentAt: this.query.get('_') ?? undefined,
        client: this.client,
      });
    } catch (failure) {
      this.#refused(failure);
      return;
    }
    published
      .then(
        () => this.#accepted(),
        (failure: unknown) => this.#refused(failure),
      )
      .catch((fault: unknown) => this.#failed(fault));
  }

  #accepted(): void {
    if (this.query.get('beacon') === '1') {
      this.reply.send(204, undefined, this.cors);
      this.#end(204);
      return;
    }
    if (this.cors === NO_HEADERS) this.reply.sendFixed(OK_ANSWER);
    else this.reply.send(200, OK_BODY, { ...JSON_TYPE, ...this.cors });
    this.#end(200);
  }

  #refused(failure: unknown): void {
    const appError = this.reply.error(failure, this.cors);
    // A refusal with no cause (bus unreachable, back-pressure, shutting down) is expected and counted in
    // the metrics; logging each would flood the log for the length of an outage.
    if (appError.status === 503 && appError.cause === undefined)
      this.deps.logger.debug({ route: this.route.route, detail: appError.message }, 'capture refused');
    else if (appError.status >= 500)
      this.deps.logger.warn(
        { err: appError.cause ?? appError, route: this.route.route, code: appError.code },
        'capture failed',
      );
    this.#end(appError.status);
  }

  /** A fault of this code, not of the request: logged, and the request no longer counts as in flight. */
  #failed(fault: unknown): void {
    this.deps.logger.error({ err: fault }, 'capture handler failed');
    if (!this.#ended) {
      this.#ended = true;
      this.deps.inFlight.end();
    }
  }

  #end(status: number): void {
    this.#ended = true;
    this.deps.inFlight.end();
    this.route.requests(status).add();
    this.route.duration.observe((performance.now() - this.#started) / 1000);
  }
}
