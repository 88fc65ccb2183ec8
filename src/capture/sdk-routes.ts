import type { HttpRequest, HttpResponse, HttpApp } from '../http/transport.ts';
import type { Logger } from '../core/logger.ts';
import type { ProjectKeys } from '../core/ports.ts';
import { AppError } from '../errors/app-error.ts';
import { corsHeaders, preflightHeaders } from '../http/cors.ts';
import type { InFlight } from '../http/in-flight.ts';
import { BodyTooLargeError, onBody } from '../http/request-body.ts';
import { Reply, readHeaders, type Headers } from '../http/reply.ts';
import { decodeBody, type Decoded } from './decode.ts';
import { MAX_WIRE_BYTES } from './limits.ts';
import { isObject, requestToken } from './payload.ts';
import {
  decideAnswer,
  flagsAnswer,
  flagsAnswerWithoutKey,
  remoteConfig,
  remoteConfigScript,
  type JsonObject,
} from './sdk-answers.ts';

/**
 * The calls PostHog's SDKs make at start-up besides capture (docs/capture.md "SDK start-up calls"):
 * `/flags` and `/decide` (feature flags, and config for older SDKs) and `/array/<key>/config[.js]` (the
 * remote config). Mounted wherever capture is (`weir start`, its capture threads, `weir capture`), as SDKs
 * send them to the host they capture to. Every answer carries CORS headers: browsers call these from the
 * page's origin.
 */

export interface SdkRoutesDeps {
  readonly catalog: ProjectKeys;
  readonly inFlight: InFlight;
  readonly logger: Logger;
}

type FlagsRoute = 'flags' | 'decide';

const FLAGS_METHODS = 'GET, POST, OPTIONS';
const CONFIG_METHODS = 'GET, OPTIONS';
const PREFLIGHT_HEADERS = ['origin', 'access-control-request-headers'];
const BODY_HEADERS = ['origin', 'content-type', 'content-encoding', 'content-length'];
const JSON_TYPE = 'application/json';
/** The remote config changes only with Weir's version: five minutes of caching, as PostHog's CDN does. */
const CONFIG_CACHE = 'public, max-age=300';

export function registerSdkRoutes(app: HttpApp, deps: SdkRoutesDeps): void {
  for (const route of ['flags', 'decide'] as const) {
    for (const pattern of [`/${route}`, `/${route}/`]) {
      app.post(pattern, (res, req) => handleFlagsPost(res, req, route, deps));
      app.get(pattern, (res, req) => {
        const origin = req.getHeader('origin');
        const answer = flagsAnswerWithoutKey(versionParam(new URLSearchParams(req.getQuery() ?? '')));
        new Reply(res).json(200, answer, corsHeaders(origin));
      });
      registerOthers(app, pattern, FLAGS_METHODS);
    }
  }
  for (const [pattern, script] of [
    ['/array/:token/config', false],
    ['/array/:token/config.js', true],
  ] as const) {
    app.get(pattern, (res, req) => handleConfig(res, req, script, deps));
    registerOthers(app, pattern, CONFIG_METHODS);
  }
}

/** The CORS preflight of a path, and 405 for the methods it does not take. */
function registerOthers(app: HttpApp, pattern: string, methods: string): void {
  app.options(pattern, (res, req) => {
    const h = readHeaders(req, PREFLIGHT_HEADERS);
    new Reply(res).send(
      204,
      undefined,
      preflightHeaders(h['origin']!, h['access-control-request-headers']!, methods),
    );
  });
  app.any(pattern, (res, req) => {
    new Reply(res).error(new AppError('method_not_allowed', { detail: `This path takes ${methods}.` }), {
      Allow: methods,
      ...corsHeaders(req.getHeader('origin')),
    });
  });
}

/** `?v=`, or its long name `?version=` (PostHog reads both). */
function versionParam(query: URLSearchParams): string | null {
  return query.get('v') ?? query.get('version');
}

/**
 * A `/flags` or `/decide` POST: the body decoded as capture decodes one (gzip, base64, `data=` forms,
 * `?compression=`), its project key checked, and no flags answered in the shape the request asks for.
 */
function handleFlagsPost(res: HttpResponse, req: HttpRequest, route: FlagsRoute, deps: SdkRoutesDeps): void {
  const reply = new Reply(res);
  const h = readHeaders(req, BODY_HEADERS);
  const cors = corsHeaders(h['origin']!);
  const query = new URLSearchParams(req.getQuery() ?? '');
  if (!deps.inFlight.accepting) {
    reply.error(
      new AppError('unavailable', { detail: 'Weir is shutting down.', retryAfterSeconds: 1 }),
      cors,
    );
    return;
  }
  deps.inFlight.begin();
  let ended = false;
  const end = (): void => {
    if (ended) return;
    ended = true;
    deps.inFlight.end();
  };
  const fail = (err: unknown): void => {
    const appError = reply.error(err, cors);
    if (appError.status >= 500) deps.logger.warn({ err, route }, 'SDK start-up call failed');
    end();
  };
  // uWS wants the body handler attached before this function returns: onBody does that synchronously.
  onBody(reply, h['content-length']!, MAX_WIRE_BYTES, (err, body, isView) => {
    if (err) {
      if (err instanceof BodyTooLargeError)
        fail(new AppError('payload_too_large', { detail: 'The body is larger than 20 MiB.' }));
      else if (err instanceof AppError) fail(err);
      else end(); // the client went away
      return;
    }
    let decoded: Decoded | Promise<Decoded>;
    try {
      decoded = decodeBody({
        // A view of uWS's memory lives only until this callback returns; a large gzip body is inflated later.
        body: isView ? Buffer.from(body) : body,
        contentType: h['content-type']!,
        contentEncoding: h['content-encoding']!,
        compression: (query.get('compression') ?? '').toLowerCase(),
      });
    } catch (failure) {
      fail(failure);
      return;
    }
    const answer = (d: Decoded): void => {
      reply.json(200, flagsAnswerFor(d.value, route, query, deps.catalog), cors);
      end();
    };
    if (!(decoded instanceof Promise)) {
      try {
        answer(decoded);
      } catch (failure) {
        fail(failure);
      }
      return;
    }
    decoded.then(answer).catch(fail);
  });
}

/** No flags, for the project the body names, in the shape of the route and its `?v=` / `?config=`. */
function flagsAnswerFor(
  value: unknown,
  route: FlagsRoute,
  query: URLSearchParams,
  catalog: ProjectKeys,
): JsonObject {
  if (!isObject(value))
    throw new AppError('invalid_payload', {
      detail: `The body is valid JSON, but not a ${route} request (a JSON object with the project key).`,
    });
  const token = requestToken(value);
  if (!catalog.projectByApiToken(token)) throw new AppError('invalid_api_key', { attr: 'api_key' });
  const version = versionParam(query);
  return route === 'decide'
    ? decideAnswer(token, version)
    : flagsAnswer(token, { version, config: query.get('config') });
}

/**
 * The remote config of the project whose key is in the path, as JSON or as the script posthog-js loads.
 * A key that names no project is a 404, as PostHog answers a key it has no config for.
 */
function handleConfig(res: HttpResponse, req: HttpRequest, script: boolean, deps: SdkRoutesDeps): void {
  const reply = new Reply(res);
  const cors = corsHeaders(req.getHeader('origin'));
  const token = pathToken(req.getParameter(0) ?? '');
  if (token === '') {
    reply.error(new AppError('missing_api_key', { detail: 'The path names no project API key.' }), cors);
    return;
  }
  if (!deps.catalog.projectByApiToken(token)) {
    reply.error(new AppError('not_found', { detail: 'No project has this API key.' }), cors);
    return;
  }
  const headers: Headers = { ...cors, 'Cache-Control': CONFIG_CACHE };
  if (script)
    reply.send(200, remoteConfigScript(token), {
      ...headers,
      'Content-Type': 'application/javascript',
    });
  else reply.send(200, JSON.stringify(remoteConfig(token)), { ...headers, 'Content-Type': JSON_TYPE });
}

/** The key as the path carries it, percent-decoded; a malformed escape is kept as it is (it names nobody). */
function pathToken(raw: string): string {
  try {
    return decodeURIComponent(raw).trim();
  } catch {
    return raw;
  }
}
