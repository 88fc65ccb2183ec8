import { Agent, request, type IncomingHttpHeaders } from 'node:http';
import type { HttpRequest, HttpResponse, HttpApp } from './transport.ts';
import type { Logger } from '../core/logger.ts';
import { AppError } from '../errors/app-error.ts';
import { corsHeaders } from './cors.ts';
import type { InFlight } from './in-flight.ts';
import { BodyTooLargeError, onBody } from './request-body.ts';
import { Reply, type Headers } from './reply.ts';

/** Largest request body passed on; the routes behind the proxy keep their own, smaller limits. */
const MAX_PROXIED_BODY = 64 * 1024 * 1024;

/** Headers of one hop only (RFC 9110 §7.6.1), plus the framing uWS writes itself. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'content-length',
]);

export interface ProxyDeps {
  /** `http://127.0.0.1:PORT` of the main thread's server. */
  readonly target: string;
  readonly inFlight: InFlight;
  readonly logger: Logger;
}

/**
 * Passes every request no other route of `app` takes to `target` and relays the answer: a capture thread
 * serves capture itself and hands the API, the endpoints and the operations routes to the main thread, which
 * owns the catalog and the store. Register it after the thread's own routes. The body is read whole first
 * (the API's bodies are small), and the answer relayed whole; a client that goes away cancels the request.
 */
export function registerProxy(app: HttpApp, deps: ProxyDeps): void {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  app.any('/*', (res, req) => proxy(res, req, deps, agent));
}

function proxy(res: HttpResponse, req: HttpRequest, deps: ProxyDeps, agent: Agent): void {
  const reply = new Reply(res);
  const method = req.getCaseSensitiveMethod();
  const query = req.getQuery();
  const path = query ? `${req.getUrl()}?${query}` : req.getUrl();
  const headers: Record<string, string> = {};
  req.forEach((name, value) => {
    if (!HOP_BY_HOP.has(name)) headers[name] = value;
  });
  const length = req.getHeader('content-length');
  const chunked = req.getHeader('transfer-encoding') !== '';
  // The proxy's own refusals are answers of the capture host: a browser reads them only with CORS headers.
  const cors = corsHeaders(headers['origin'] ?? '');
  if (!deps.inFlight.accepting) {
    reply.error(
      new AppError('unavailable', { detail: 'Weir is shutting down.', retryAfterSeconds: 1 }),
      cors,
    );
    return;
  }
  deps.inFlight.begin();
  const out: Outgoing = { method, path, headers, data: undefined };
  // uWS calls onData only for a request that has a body. A refusal is answered within uWS's callback: one
  // of a Content-Length uWS itself refuses must be written before uWS closes the connection.
  if (chunked || (length !== '' && length !== '0')) {
    onBody(reply, length, MAX_PROXIED_BODY, (err, data, isView) => {
      if (err) {
        if (err instanceof BodyTooLargeError)
          reply.error(new AppError('payload_too_large', { detail: 'The body is larger than 64 MiB.' }), cors);
        else if (err instanceof AppError) reply.error(err, cors);
        deps.inFlight.end();
        return;
      }
      relay(reply, { ...out, data: isView ? Buffer.from(data) : data }, cors, deps, agent);
    });
  } else relay(reply, out, cors, deps, agent);
}

interface Outgoing {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly data: Buffer | undefined;
}

/** Forwards the request and relays the answer; `cors` goes on the proxy's own refusal. */
function relay(reply: Reply, out: Outgoing, cors: Headers, deps: ProxyDeps, agent: Agent): void {
  forward(reply, out, deps, agent)
    .catch((err: unknown) => {
      deps.logger.error({ err, path: out.path }, 'proxying a request to the main thread failed');
      reply.error(err, cors);
    })
    .finally(() => deps.inFlight.end());
}

function forward(reply: Reply, out: Outgoing, deps: ProxyDeps, agent: Agent): Promise<void> {
  return new Promise((resolve, reject) => {
    const headers = out.data ? { ...out.headers, 'content-length': String(out.data.length) } : out.headers;
    const upstream = request(`${deps.target}${out.path}`, { method: out.method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        reply.send(res.statusCode ?? 502, Buffer.concat(chunks), relayed(res.headers));
        resolve();
      });
    });
    upstream.on('error', reject);
    reply.onAbort(() => {
      upstream.destroy();
      resolve();
    });
    upstream.end(out.data);
  });
}

function relayed(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}
