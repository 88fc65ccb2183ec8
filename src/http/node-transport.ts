import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { STATUS_CODES } from 'node:http';
import { AppError, errorBody } from '../errors/app-error.ts';
import { corsHeaders } from './cors.ts';
import {
  httpUrl,
  type HttpApp,
  type HttpRequest,
  type HttpResponse,
  type HttpServer,
  type RequestHandler,
  type Transport,
} from './transport.ts';

/**
 * The HTTP transport on Node's own `http`, for a Node.js uWebSockets.js has no build for: the same routes
 * and the same request/response model as uWS (transport.ts), so every route runs unchanged on either.
 */
export function nodeTransport(): Transport {
  return {
    name: 'node',
    sharesPorts: SHARES_PORTS,
    createApp: () => new NodeApp(),
    listen: (app, host, port, options) => (app as NodeApp).listen(host, port, options),
    closeAll: (app) => (app as NodeApp).closeAll(),
  };
}

/** `reusePort` (SO_REUSEPORT) came to `net.Server.listen` in Node 22.12 and 23.1; older lines ignore it. */
const SHARES_PORTS = ((): boolean => {
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  return major >= 23 ? major > 23 || minor >= 1 : major === 22 && minor >= 12;
})();

/** As uWS: a connection idle this long is closed, and a refused body is read at most this long after its answer. */
const IDLE_MS = 10_000;

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete' | 'options' | 'head';

/** One segment of the route tree: its static children, its `:param` child, its `*` handlers, its own. */
class RouteNode {
  readonly statics = new Map<string, RouteNode>();
  param: RouteNode | undefined;
  /** Handlers of a `*` ending here: it takes one segment or more. */
  wildcard: Handlers | undefined;
  /** Handlers of a pattern that ends here. */
  own: Handlers | undefined;
}

interface Handlers {
  readonly byMethod: Map<string, RequestHandler>;
  any: RequestHandler | undefined;
}

function handlersFor(handlers: Handlers | undefined, method: string): RequestHandler | undefined {
  return handlers === undefined ? undefined : (handlers.byMethod.get(method) ?? handlers.any);
}

class NodeApp implements HttpApp {
  readonly #root = new RouteNode();
  readonly #servers = new Set<Server>();
  readonly #sockets = new Set<Socket>();
  /** Set once the app stops listening: every answer from then on closes its connection. */
  closing = false;

  get(pattern: string, handler: RequestHandler): this {
    return this.#add('get', pattern, handler);
  }
  post(pattern: string, handler: RequestHandler): this {
    return this.#add('post', pattern, handler);
  }
  put(pattern: string, handler: RequestHandler): this {
    return this.#add('put', pattern, handler);
  }
  patch(pattern: string, handler: RequestHandler): this {
    return this.#add('patch', pattern, handler);
  }
  del(pattern: string, handler: RequestHandler): this {
    return this.#add('delete', pattern, handler);
  }
  options(pattern: string, handler: RequestHandler): this {
    return this.#add('options', pattern, handler);
  }
  head(pattern: string, handler: RequestHandler): this {
    return this.#add('head', pattern, handler);
  }
  any(pattern: string, handler: RequestHandler): this {
    return this.#add(undefined, pattern, handler);
  }

  /** Registers a handler; as in uWS, the first registered for a pattern and method is kept. */
  #add(method: Method | undefined, pattern: string, handler: RequestHandler): this {
    const segments = pattern.slice(1).split('/');
    let node = this.#root;
    let handlers: Handlers | undefined;
    for (let i = 0; i < segments.length; i++) {
      const segment = segments[i]!;
      if (segment === '*' && i === segments.length - 1) {
        handlers = node.wildcard ??= { byMethod: new Map(), any: undefined };
        break;
      }
      if (segment.startsWith(':')) node = node.param ??= new RouteNode();
      else {
        let next = node.statics.get(segment);
        if (next === undefined) node.statics.set(segment, (next = new RouteNode()));
        node = next;
      }
      if (i === segments.length - 1) handlers = node.own ??= { byMethod: new Map(), any: undefined };
    }
    if (method === undefined) handlers!.any ??= handler;
    else if (!handlers!.byMethod.has(method)) handlers!.byMethod.set(method, handler);
    return this;
  }

  /** The handler of a path (its segments) and its `:param` values, or undefined when no route takes it. */
  route(segments: readonly string[], method: string, params: string[]): RequestHandler | undefined {
    return find(this.#root, segments, 0, method, params);
  }

  listen(host: string, port: number, options: { readonly sharePort: boolean }): Promise<HttpServer> {
    const server = createServer({ noDelay: true, keepAliveTimeout: IDLE_MS }, (req, res) =>
      this.#serve(req, res),
    );
    server.keepAliveTimeout = IDLE_MS;
    server.on('connection', (socket: Socket) => {
      this.#sockets.add(socket);
      socket.once('close', () => this.#sockets.delete(socket));
    });
    server.on('clientError', refuseUnparsed);
    return new Promise((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) => {
        reject(
          err.code === 'EADDRINUSE'
            ? new Error(`cannot listen on ${httpUrl(host, port)}: is the port in use?`)
            : err,
        );
      });
      server.listen({ host, port, reusePort: options.sharePort && SHARES_PORTS }, () => {
        this.#servers.add(server);
        const address = server.address();
        const local = typeof address === 'object' && address !== null ? address.port : port;
        let open = true;
        resolve({
          port: local,
          url: httpUrl(host, local),
          stopListening: () => {
            if (!open) return;
            open = false;
            this.closing = true;
            server.close(); // also closes the connections that are idle now
          },
        });
      });
    });
  }

  closeAll(): void {
    this.closing = true;
    for (const server of this.#servers) server.close();
    for (const socket of this.#sockets) socket.destroy();
  }

  #serve(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const params: string[] = [];
    const handler = this.route(path.slice(1).split('/'), req.method!.toLowerCase(), params);
    const response = new NodeResponse(req, res, this);
    if (handler === undefined) {
      // Every role registers a `/*` of its own; this is only for an app without one.
      response.writeStatus('404 Not Found');
      response.end();
      return;
    }
    handler(response, new NodeRequest(req, path, q === -1 ? '' : url.slice(q + 1), params));
  }
}

/** Depth first, as uWS's router: at each segment a static child, then a parameter, then a wildcard. */
function find(
  node: RouteNode,
  segments: readonly string[],
  at: number,
  method: string,
  params: string[],
): RequestHandler | undefined {
  if (at === segments.length) return handlersFor(node.own, method);
  const segment = segments[at]!;
  const next = node.statics.get(segment);
  if (next !== undefined) {
    const found = find(next, segments, at + 1, method, params);
    if (found !== undefined) return found;
  }
  if (node.param !== undefined) {
    params.push(segment);
    const found = find(node.param, segments, at + 1, method, params);
    if (found !== undefined) return found;
    params.pop();
  }
  return handlersFor(node.wildcard, method);
}

/** Header names given as bytes (capture's hot path gives uWS bytes), as text once each. */
const NAMES = new WeakMap<Uint8Array, string>();

function headerName(name: string | Uint8Array): string {
  if (typeof name === 'string') return name;
  let text = NAMES.get(name);
  if (text === undefined) NAMES.set(name, (text = Buffer.from(name).toString('latin1')));
  return text;
}

class NodeRequest implements HttpRequest {
  constructor(
    private readonly req: IncomingMessage,
    private readonly path: string,
    private readonly query: string,
    private readonly params: readonly string[],
  ) {}

  getHeader(lowerCaseName: string | Uint8Array): string {
    const value = this.req.headers[headerName(lowerCaseName)];
    if (value === undefined) return '';
    return typeof value === 'string' ? value : value.join(', ');
  }

  getUrl(): string {
    return this.path;
  }

  getQuery(): string {
    return this.query;
  }

  getParameter(index: number): string | undefined {
    return this.params[index];
  }

  getCaseSensitiveMethod(): string {
    return this.req.method ?? '';
  }

  forEach(cb: (name: string, value: string) => void): void {
    const raw = this.req.rawHeaders;
    for (let i = 0; i + 1 < raw.length; i += 2) cb(raw[i]!.toLowerCase(), raw[i + 1]!);
  }
}

/**
 * uWS's response on Node's: the status and headers are kept until the first write of the body, so that
 * Node sends a whole body with its Content-Length and a body written in pieces chunked.
 */
class NodeResponse implements HttpResponse {
  #status = 200;
  #statusText: string | undefined;
  readonly #headers: [string, string][] = [];
  #headSent = false;
  #ended = false;
  #aborted = false;
  #paused = false;
  #closeAfter = false;
  #offset = 0;
  #onAborted: (() => void) | undefined;

  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly app: NodeApp,
  ) {
    res.once('close', () => {
      if (this.#ended) return;
      this.#aborted = true;
      this.#onAborted?.();
    });
  }

  onAborted(handler: () => void): this {
    this.#onAborted = handler;
    return this;
  }

  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): this {
    // One chunk held back, so that the last one is given with isLast (a body in one chunk, in one call).
    let held: Buffer | undefined;
    this.req.on('data', (chunk: Buffer) => {
      if (held !== undefined) handler(ownBytes(held), false);
      held = chunk;
    });
    this.req.once('end', () => {
      if (this.#aborted) return;
      handler(held === undefined ? EMPTY : ownBytes(held), true);
    });
    return this;
  }

  onWritable(handler: (offset: number) => boolean): this {
    const onDrain = (): void => {
      if (this.#aborted || handler(this.#offset)) this.res.off('drain', onDrain);
    };
    this.res.on('drain', onDrain);
    return this;
  }

  cork(cb: () => void): this {
    cb();
    return this;
  }

  writeStatus(status: string | Uint8Array): this {
    const text = typeof status === 'string' ? status : Buffer.from(status).toString('latin1');
    const space = text.indexOf(' ');
    this.#status = Number(space === -1 ? text : text.slice(0, space));
    this.#statusText = space === -1 ? undefined : text.slice(space + 1);
    return this;
  }

  writeHeader(name: string | Uint8Array, value: string | Uint8Array): this {
    const key = typeof name === 'string' ? name : Buffer.from(name).toString('latin1');
    const text = typeof value === 'string' ? value : Buffer.from(value).toString('latin1');
    if (key.toLowerCase() === 'connection' && text.toLowerCase() === 'close') this.#closeAfter = true;
    else this.#headers.push([key, text]);
    return this;
  }

  write(chunk: string | Uint8Array): boolean {
    if (this.#ended || this.#aborted) return true;
    this.#sendHead();
    this.#offset += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength;
    return this.res.write(chunk);
  }

  end(body?: string | Uint8Array, closeConnection = false): this {
    if (this.#ended || this.#aborted) return this;
    if (closeConnection) {
      this.#closeAfter = true;
      this.#paused = true; // uWS closes at once: nothing more of the request is read
    }
    this.#sendHead();
    this.#ended = true;
    if (body !== undefined)
      this.#offset += typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
    this.res.end(body);
    return this;
  }

  endWithoutBody(reportedContentLength?: number): this {
    if (reportedContentLength !== undefined)
      this.#headers.push(['Content-Length', String(reportedContentLength)]);
    return this.end();
  }

  /** Node's socket buffers what it is given: the body is taken whole, and no `onWritable` follows. */
  tryEnd(body: Uint8Array): [boolean, boolean] {
    this.end(body);
    return [true, true];
  }

  getWriteOffset(): number {
    return this.#offset;
  }

  pause(): void {
    this.#paused = true;
    this.req.pause();
    // A request read from (`read`) is not read on and thrown away when its answer is done (http's _dump):
    // paused, it takes what fills its buffer, and then back-pressure stops reading the socket.
    this.req.read(0);
  }

  close(): this {
    this.res.destroy();
    return this;
  }

  getRemoteAddressAsText(): ArrayBuffer {
    return ENCODER.encode(this.req.socket.remoteAddress ?? '').buffer;
  }

  #sendHead(): void {
    if (this.#headSent) return;
    this.#headSent = true;
    const res = this.res;
    res.statusCode = this.#status;
    res.statusMessage = this.#statusText ?? STATUS_CODES[this.#status] ?? '';
    for (const [name, value] of this.#headers) {
      const had = res.getHeader(name);
      res.setHeader(name, had === undefined ? value : [...(Array.isArray(had) ? had : [String(had)]), value]);
    }
    if (this.#closeAfter || this.app.closing) {
      res.setHeader('Connection', 'close');
      if (!this.req.complete) closeGently(res.socket, this.#paused);
    }
  }
}

/** A chunk as an ArrayBuffer of its own: Node's chunks are views of a larger read buffer. */
function ownBytes(chunk: Buffer): ArrayBuffer {
  const { buffer, byteOffset, byteLength } = chunk;
  if (byteOffset === 0 && byteLength === buffer.byteLength && buffer instanceof ArrayBuffer) return buffer;
  return buffer.slice(byteOffset, byteOffset + byteLength) as ArrayBuffer;
}

const EMPTY = new ArrayBuffer(0);
const ENCODER = new TextEncoder();

/**
 * How a connection ends after an answer given before the request's body was all read. Node closes such a
 * connection as soon as the answer is written, with body bytes still unread, and that close resets it: a
 * client still writing fails before it reads the answer. As uWS is made to (request-body.ts), the connection
 * is half-closed after the answer instead; the body is read on and thrown away (Node's parser does that), or
 * with `paused` not read at all; and the connection is closed when the client closes it or `IDLE_MS` after.
 */
function closeGently(socket: Socket | null, paused: boolean): void {
  if (socket === null) return;
  // Node ends a `Connection: close` answer with socket.destroySoon() once it is written (http's resOnFinish).
  socket.destroySoon = (): void => {
    socket.end();
    if (paused) socket.pause();
    const timer = setTimeout(() => socket.destroy(), IDLE_MS);
    timer.unref();
    socket.once('end', () => socket.destroy());
    socket.once('close', () => clearTimeout(timer));
  };
}

/**
 * A request Node's parser refuses before any route sees it (a Content-Length that is not a number, both
 * Content-Length and Transfer-Encoding, a head over Node's 16 KiB): answered with the error body every
 * refusal has, with CORS headers for a browser, and closed. One refused within a body a route already reads
 * (a bad chunk size) is closed at once: its route answers nothing more.
 */
function refuseUnparsed(err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Socket): void {
  if (!socket.writable || (socket as Socket & { _httpMessage?: unknown })._httpMessage) {
    socket.destroy();
    return;
  }
  const head = (err.rawPacket ?? Buffer.alloc(0)).subarray(0, 16 * 1024).toString('latin1');
  const body = JSON.stringify(errorBody(refusal(err.code ?? '', head)));
  const headers = { 'Content-Type': 'application/json', ...corsHeaders(headerIn(head, 'origin')) };
  let text = 'HTTP/1.1 400 Bad Request\r\n';
  for (const [name, value] of Object.entries(headers)) text += `${name}: ${value}\r\n`;
  text += `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`;
  socket.end(text + body);
}

/** The error of a request the parser refused with `code` (llhttp's), as request-body.ts words it on uWS. */
function refusal(code: string, head: string): AppError {
  switch (code) {
    case 'HPE_INVALID_CONTENT_LENGTH':
      return new AppError('invalid_request', {
        detail: `Content-Length '${headerIn(head, 'content-length').slice(0, 40)}' is not a length Weir takes: 1 to 9 digits, nothing else.`,
        attr: 'Content-Length',
      });
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      return new AppError('invalid_request', {
        detail: 'A request cannot have both Content-Length and Transfer-Encoding.',
        attr: 'Content-Length',
      });
    case 'HPE_HEADER_OVERFLOW':
      return new AppError('invalid_request', { detail: 'The request head is over 16 KiB.' });
    default:
      return new AppError('invalid_request', { detail: 'The request is not HTTP/1.1 that Weir can read.' });
  }
}

/** A header's value in the raw head the parser refused ('' when absent). */
function headerIn(head: string, name: string): string {
  const match = new RegExp(`\\r\\n${name}:[ \\t]*([^\\r\\n]*)`, 'i').exec(head);
  return match?.[1]?.trim() ?? '';
}
