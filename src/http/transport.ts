/**
 * The HTTP transport port. Weir's routes are written against uWebSockets.js's request/response model (a
 * handler called with the response and the request; the request readable only inside the call; the body and
 * back-pressure by callbacks), and these interfaces are the part of it they use. uWS's own objects satisfy
 * them as they are, so the fast path costs nothing for the port; where uWS's binary does not load (a Node.js
 * it has no build for), node-transport.ts gives the same model on Node's `http`.
 */

/** The request, readable only inside the handler's call (uWS reuses it for the next request). */
export interface HttpRequest {
  /** The header's value ('' when absent); the name in lower case. */
  getHeader(lowerCaseName: string | Uint8Array): string;
  /** The path, without the query. */
  getUrl(): string;
  /** The query without its `?`; '' or undefined when there is none. */
  getQuery(): string | undefined;
  /** The `index`th `:param` of the route's pattern, as the path has it (not percent-decoded). */
  getParameter(index: number): string | undefined;
  /** The method as the client sent it. */
  getCaseSensitiveMethod(): string;
  /** Every header, its name in lower case. */
  forEach(cb: (name: string, value: string) => void): void;
}

/**
 * The response, and the request's body. Valid until the response ends or the client goes away
 * (`onAborted`); writes made after an await are made inside `cork`.
 */
export interface HttpResponse {
  onAborted(handler: () => void): unknown;
  /** The body, a chunk at a time; a chunk is valid only within the call. Without a body, one empty last chunk. */
  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): unknown;
  /** Called when the socket takes more after a write was held back; return true once done writing. */
  onWritable(handler: (offset: number) => boolean): unknown;
  cork(cb: () => void): unknown;
  /** The status line after the version: `200 OK`. */
  writeStatus(status: string | Uint8Array): unknown;
  writeHeader(name: string | Uint8Array, value: string | Uint8Array): unknown;
  /** A piece of a chunked body; false when the socket holds it back (wait for `onWritable`). */
  write(chunk: string | Uint8Array): boolean;
  /** Ends the response with `body`, closing the connection after it with `closeConnection`. */
  end(body?: string | Uint8Array, closeConnection?: boolean): unknown;
  /** Ends a response that has no body (HEAD), reporting `reportedContentLength` as its length. */
  endWithoutBody(reportedContentLength?: number): unknown;
  /** Sends as much of a body of `totalSize` as the socket takes: [taken whole, response ended]. */
  tryEnd(body: Uint8Array, totalSize: number): [boolean, boolean];
  /** Bytes of this response written so far, for `onWritable`'s offset. */
  getWriteOffset(): number;
  /** Stops reading the request. */
  pause(): void;
  /** Closes the connection at once. */
  close(): unknown;
  /** The peer's address as text: `127.0.0.1`, `::1`, or an IPv4-mapped IPv6 one on a dual-stack socket. */
  getRemoteAddressAsText(): ArrayBuffer;
}

export type RequestHandler = (res: HttpResponse, req: HttpRequest) => void;

/**
 * Routes by method and pattern. A pattern is a path whose segments may be `:name` (one segment, read with
 * `getParameter`) and whose last may be `*` (the rest). For a request, a static segment wins over a parameter
 * and a parameter over `*`, segment by segment; then a method's own handler over `any`.
 */
export interface HttpApp {
  get(pattern: string, handler: RequestHandler): unknown;
  post(pattern: string, handler: RequestHandler): unknown;
  put(pattern: string, handler: RequestHandler): unknown;
  patch(pattern: string, handler: RequestHandler): unknown;
  del(pattern: string, handler: RequestHandler): unknown;
  options(pattern: string, handler: RequestHandler): unknown;
  head(pattern: string, handler: RequestHandler): unknown;
  any(pattern: string, handler: RequestHandler): unknown;
}

export interface HttpServer {
  readonly port: number;
  /** `http://host:port`, with an IPv6 host in brackets. */
  readonly url: string;
  /** Stops accepting connections; requests in progress go on. */
  stopListening(): void;
}

export type TransportName = 'uws' | 'node';

/** One of the two HTTP servers Weir can run on. */
export interface Transport {
  readonly name: TransportName;
  createApp(): HttpApp;
  /**
   * Binds the app. A role that owns its port binds it alone, so a second Weir started on a taken port fails
   * instead of silently taking half its connections; with `sharePort` several listeners (processes, or the
   * capture threads of one `weir start`) share it (SO_REUSEPORT) and the kernel spreads connections across them.
   */
  listen(
    app: HttpApp,
    host: string,
    port: number,
    options: { readonly sharePort: boolean },
  ): Promise<HttpServer>;
  /** Closes every connection of `app`, idle or not (a capture thread's last step). */
  closeAll(app: HttpApp): void;
  /** Whether listeners can share a port here (SO_REUSEPORT): uWS always, Node's `http` from Node 22.12. */
  readonly sharesPorts: boolean;
}

/** `http://host:port`, with an IPv6 host in brackets. */
export function httpUrl(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}
