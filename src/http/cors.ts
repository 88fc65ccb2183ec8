import type { Headers } from './reply.ts';

/**
 * The CORS headers of an answer a browser is to read: the request's Origin echoed with credentials allowed
 * (posthog-js sends its XHRs with credentials, and a `*` would fail those), or `*` for a request without one.
 * `Vary: Origin` keeps a cache from handing one origin's answer to another.
 */
export function corsHeaders(origin: string): Headers {
  return origin
    ? { 'Access-Control-Allow-Origin': origin, 'Access-Control-Allow-Credentials': 'true', Vary: 'Origin' }
    : { 'Access-Control-Allow-Origin': '*', Vary: 'Origin' };
}

/** The default of the headers a preflight allows when it names none. */
const DEFAULT_ALLOWED_HEADERS = 'Content-Type, Content-Encoding';

/**
 * The headers of a `204` answer to a CORS preflight: the methods of the path, the request headers the
 * browser asks for (echoed: SDKs add their own), and a day before the browser asks again.
 */
export function preflightHeaders(origin: string, requestHeaders: string, methods: string): Headers {
  return {
    ...corsHeaders(origin),
    'Access-Control-Allow-Methods': methods,
    'Access-Control-Allow-Headers': requestHeaders || DEFAULT_ALLOWED_HEADERS,
    'Access-Control-Max-Age': '86400',
  };
}
