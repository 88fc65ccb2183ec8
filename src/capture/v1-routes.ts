import type { Logger } from '../core/logger.ts';
import type { Metrics } from '../core/metrics.ts';
import type { ProjectKeys } from '../core/ports.ts';
import { AppError } from '../errors/app-error.ts';
import { corsHeaders, preflightHeaders } from '../http/cors.ts';
import type { InFlight } from '../http/in-flight.ts';
import { BodyTooLargeError, endingBeforeBody, onBody } from '../http/request-body.ts';
import { Reply, type Headers } from '../http/reply.ts';
import type { HttpApp, HttpRequest, HttpResponse } from '../http/transport.ts';
import type { CaptureService } from './capture-service.ts';
import { readClient } from './client-address.ts';
import type { ClientContext } from './normalize.ts';
import { RouteMetrics } from './http-routes.ts';
import { parseV1Json, v1BodyText, V1_MAX_WIRE_BYTES } from './v1-decode.ts';
import { readV1Batch, type V1Batch, type V1Result } from './v1-envelope.ts';
import { toV1Error, V1Error } from './v1-errors.ts';
import { checkV1Headers, readV1Headers, type V1RawHeaders, type V1RequestMeta } from './v1-headers.ts';

/**
 * Capture V1 (`POST /i/v1/analytics/events`, docs/capture-v1.md): the project key in `Authorization`, a
 * batch of typed events, and an answer per event. The events go through v0's normalisation and the same
 * bus, and the `200` waits for the bus to say they are durable, as v0's does.
 */
export const V1_PATH = '/i/v1/analytics/events';

export interface V1RoutesDeps {
  readonly service: CaptureService;
  readonly catalog: ProjectKeys;
  readonly inFlight: InFlight;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly now?: () => number;
}

const METHODS = 'POST, OPTIONS';
/** What a preflight allows when the browser names no headers: everything a V1 client sends. */
const ALLOWED_HEADERS =
  'Content-Type, Content-Encoding, Authorization, PostHog-Sdk-Info, PostHog-Attempt, PostHog-Request-Id, PostHog-Request-Timestamp';
/** Not CORS-safelisted, so a page's script could not read them otherwise. */
const EXPOSED = { 'Access-Control-Expose-Headers': 'Retry-After, PostHog-Request-Id' };
const JSON_TYPE = 'application/json';
/** Echoed as it came when it is a plain header value of a sensible length (a UUID is 36). */
const ECHOABLE_ID = /^[\x21-\x7e]{1,200}$/;

export function registerCaptureV1Routes(app: HttpApp, deps: V1RoutesDeps): void {
  const route = new RouteMetrics(V1_PATH.slice(1), deps.metrics);
  for (const pattern of [V1_PATH, `${V1_PATH}/`]) {
    app.post(pattern, (res, req) => handlePost(res, req, route, deps));
    app.options(pattern, (res, req) => {
      const origin = req.getHeader('origin');
      const asked = req.getHeader('access-control-request-headers');
      new Reply(res).send(204, undefined, {
        ...preflightHeaders(origin, asked || ALLOWED_HEADERS, METHODS),
        ...EXPOSED,
      });
    });
    app.any(pattern, (res, req) => {
      const headers = { Allow: METHODS, ...corsHeaders(req.getHeader('origin')), ...echo(req) };
      sendError(new Reply(res), new V1Error('method_not_allowed'), headers);
    });
  }
}

function echo(req: HttpRequest): Headers {
  const id = req.getHeader('posthog-request-id');
  return ECHOABLE_ID.test(id) ? { 'PostHog-Request-Id': id } : {};
}

/** The headers every answer to a POST carries: CORS for a browser (one sends Origin), the request id. */
function answerHeaders(h: V1RawHeaders): Headers {
  const out: Record<string, string> = h.origin ? { ...corsHeaders(h.origin), ...EXPOSED } : {};
  if (ECHOABLE_ID.test(h.requestId)) out['PostHog-Request-Id'] = h.requestId;
  return out;
}

function sendError(reply: Reply, err: V1Error, headers: Headers): void {
  const extra: Record<string, string> = { 'Content-Type': JSON_TYPE, ...headers };
  if (err.retryAfterSeconds !== undefined) extra['Retry-After'] = String(err.retryAfterSeconds);
  reply.send(err.status, err.body(), extra);
}

function handlePost(res: HttpResponse, req: HttpRequest, route: RouteMetrics, deps: V1RoutesDeps): void {
  const reply = new Reply(res);
  const h = readV1Headers(req);
  const headers = answerHeaders(h);
  let meta: V1RequestMeta;
  try {
    if (!deps.inFlight.accepting)
      throw new V1Error('service_unavailable', 'Weir is shutting down.', { retryAfterSeconds: 1 });
    meta = checkV1Headers(h, deps.catalog);
  } catch (err) {
    // Refused on its headers, as PostHog's capture refuses before it reads a body.
    const refusal = toV1Error(err);
    reply.endConnection(endingBeforeBody(h.contentLength));
    sendError(reply, refusal, headers);
    route.requests(refusal.status).add();
    return;
  }
  const anonymizeIps = meta.project.anonymizeIps;
  const client: ClientContext = {
    // A project that keeps no IP never has one worked out, nor put on the bus.
    clientIp: anonymizeIps ? '' : deps.service.clientIp(readClient(res, req)),
    anonymizeIps,
    geoip: deps.service.geoip,
  };
  deps.inFlight.begin();
  const call = new V1Call(reply, meta, client, headers, route, deps);
  // uWS wants the body handler attached before this function returns: onBody does that synchronously.
  onBody(reply, h.contentLength, V1_MAX_WIRE_BYTES, (err, body, isView) => call.bodyRead(err, body, isView));
}

/** One V1 request from its body on; callbacks rather than async functions, as v0's CaptureCall. */
class V1Call {
  readonly #started = performance.now();
  #ended = false;

  constructor(
    readonly reply: Reply,
    readonly meta: V1RequestMeta,
    readonly client: ClientContext,
    readonly headers: Headers,
    readonly route: RouteMetrics,
    readonly deps: V1RoutesDeps,
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
      if (err instanceof BodyTooLargeError)
        this.#refuse(new V1Error('payload_too_large', 'The body is larger than 10 MiB.'));
      else if (err instanceof AppError) this.#refuse(new V1Error('invalid_header_value', err.message));
      else this.#end(499); // the client went away; nothing was accepted
      return;
    }
    this.deps.metrics.captureBytes.inc(body.length);
    if (body.length === 0) {
      this.#refuse(new V1Error('empty_body'));
      return;
    }
    const now = (this.deps.now ?? Date.now)();
    let text: string | Promise<string>;
    try {
      // A view of uWS's memory lives only until this callback returns; a large compressed body is inflated later.
      text = v1BodyText(
        isView && this.meta.coding !== undefined ? Buffer.from(body) : body,
        this.meta.coding,
      );
    } catch (failure) {
      this.#refuse(failure);
      return;
    }
    if (typeof text === 'string') this.#read(text, now);
    else
      text
        .then(
          (t) => this.#read(t, now),
          (failure: unknown) => this.#refuse(failure),
        )
        .catch((fault: unknown) => this.#failed(fault));
  }

  #read(text: string, now: number): void {
    let batch: V1Batch;
    try {
      batch = readV1Batch(parseV1Json(text), text.length, this.meta, this.client, now, (reason) =>
        this.deps.metrics.captureDropped.inc({ reason }),
      );
    } catch (failure) {
      this.#refuse(failure);
      return;
    }
    if (batch.events.length === 0 && batch.warnings.length === 0) {
      this.#answer(batch.results, undefined);
      return;
    }
    let published: Promise<void>;
    try {
      published = this.deps.service.publish(batch.events, batch.warnings, batch.historical, now);
    } catch (failure) {
      this.#notPublished(batch, failure);
      return;
    }
    published
      .then(
        () => this.#answer(batch.results, undefined),
        (failure: unknown) => this.#notPublished(batch, failure),
      )
      .catch((fault: unknown) => this.#failed(fault));
  }

  /**
   * The bus did not make the events durable. When it says to come back (back-pressure, a store or bus that
   * cannot take them now), each is answered `retry`, which the V1 SDKs resend alone, with `Retry-After`;
   * any other failure is the whole batch's 500, which they resend whole. Either way the uuids make the
   * resend exact: an event that was stored after all is not stored twice.
   */
  #notPublished(batch: V1Batch, failure: unknown): void {
    const refusal = toV1Error(failure);
    if (refusal.status === 503 || batch.events.length === 0) {
      this.deps.logger.debug({ route: this.route.route, detail: refusal.message }, 'capture refused');
      for (const e of batch.events) batch.results.set(e.uuid, NOT_PERSISTED);
      this.#answer(batch.results, batch.events.length > 0 ? (refusal.retryAfterSeconds ?? 1) : undefined);
      return;
    }
    this.#refuse(refusal);
  }

  #answer(results: Map<string, V1Result>, retryAfterSeconds: number | undefined): void {
    const headers: Record<string, string> = { 'Content-Type': JSON_TYPE, ...this.headers };
    if (retryAfterSeconds !== undefined) headers['Retry-After'] = String(retryAfterSeconds);
    this.reply.send(200, JSON.stringify({ results: Object.fromEntries(results) }), headers);
    this.#end(200);
  }

  #refuse(failure: unknown): void {
    const refusal = toV1Error(failure);
    if (refusal.status >= 500 && refusal.status !== 503)
      this.deps.logger.warn(
        { err: refusal.cause ?? refusal, route: this.route.route, code: refusal.tag },
        'capture failed',
      );
    sendError(this.reply, refusal, this.headers);
    this.#end(refusal.status);
  }

  /** A fault of this code, not of the request: logged, and the request no longer counts as in flight. */
  #failed(fault: unknown): void {
    this.deps.logger.error({ err: fault }, 'capture handler failed');
    sendError(this.reply, new V1Error('internal_error', undefined, { retryAfterSeconds: 1 }), this.headers);
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

const NOT_PERSISTED: V1Result = Object.freeze({ result: 'retry', details: 'not_persisted' });
