/**
 * One keep-alive HTTP/1.1 client connection carrying one request at a time, as a browser or SDK connection
 * does (no pipelining). Responses are parsed just enough to find the status and where the next response
 * starts: a full HTTP client would cost the generator more CPU than the server under test spends.
 */
import { connect, isIP, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';

const HEADER_END = Buffer.from('\r\n\r\n');
// uWS writes `Content-Length`; the lower-case form covers any other server put behind the bench.
const CONTENT_LENGTH = [Buffer.from('\r\nContent-Length:'), Buffer.from('\r\ncontent-length:')];

export interface ConnectionListener {
  /** A complete response to the request in flight. */
  onResponse(conn: HttpConnection, status: number): void;
  /** The connection is gone; `hadRequest` says whether a request was in flight (it is lost). */
  onClosed(conn: HttpConnection, hadRequest: boolean, reason: string): void;
}

export class HttpConnection {
  /** When the request in flight was due (open loop) and when it was written; NaN when idle. */
  intendedAt = Number.NaN;
  sentAt = Number.NaN;
  busy = false;
  closed = false;

  readonly #socket: Socket;
  readonly #listener: ConnectionListener;
  #partial: Buffer | undefined;

  private constructor(socket: Socket, listener: ConnectionListener) {
    this.#socket = socket;
    this.#listener = listener;
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('error', (err) => this.#close(err.message));
    socket.on('close', () => this.#close('closed by server'));
  }

  static open(
    host: string,
    port: number,
    listener: ConnectionListener,
    timeoutMs: number,
    /** HTTPS: a TLS session per connection, made before the run starts so its handshake is never timed. */
    tls = false,
  ): Promise<HttpConnection> {
    return new Promise((resolve, reject) => {
      const socket: Socket = tls
        ? connectTls({ host, port, ...(isIP(host) ? {} : { servername: host }) }).setNoDelay(true)
        : connect({ host, port, noDelay: true });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`connect to ${host}:${port} timed out`));
      }, timeoutMs);
      socket.once('error', (err: Error) => {
        clearTimeout(timer);
        reject(err);
      });
      socket.once(tls ? 'secureConnect' : 'connect', () => {
        clearTimeout(timer);
        socket.removeAllListeners('error');
        resolve(new HttpConnection(socket, listener));
      });
    });
  }

  send(request: Buffer, intendedAt: number, now: number): void {
    this.busy = true;
    this.intendedAt = intendedAt;
    this.sentAt = now;
    this.#socket.write(request);
  }

  destroy(): void {
    this.closed = true;
    this.#socket.destroy();
  }

  #close(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.#socket.destroy();
    const hadRequest = this.busy;
    this.busy = false;
    this.#listener.onClosed(this, hadRequest, reason);
  }

  #onData(chunk: Buffer): void {
    // The common case is one whole response in one chunk; concatenation is only for split responses.
    const buf = this.#partial ? Buffer.concat([this.#partial, chunk]) : chunk;
    this.#partial = undefined;
    let pos = 0;
    while (pos < buf.length && !this.closed) {
      const headerEnd = buf.indexOf(HEADER_END, pos);
      if (headerEnd < 0) break;
      const status = parseStatus(buf, pos);
      const bodyLength = parseContentLength(buf, pos, headerEnd, status);
      if (status < 0 || bodyLength < 0) {
        this.#close('unparseable response');
        return;
      }
      const end = headerEnd + HEADER_END.length + bodyLength;
      if (end > buf.length) break;
      pos = end;
      if (!this.busy) {
        this.#close('response without a request');
        return;
      }
      this.busy = false;
      this.#listener.onResponse(this, status);
    }
    if (pos < buf.length && !this.closed) this.#partial = Buffer.from(buf.subarray(pos));
  }
}

/** `HTTP/1.1 200 OK` → 200; -1 if the status line is not HTTP. */
function parseStatus(buf: Buffer, start: number): number {
  if (buf.length < start + 12 || buf[start] !== 0x48 /* H */) return -1;
  let status = 0;
  for (let i = start + 9; i < start + 12; i++) {
    const digit = buf[i]! - 0x30;
    if (digit < 0 || digit > 9) return -1;
    status = status * 10 + digit;
  }
  return status;
}

/** The body length from Content-Length; 0 for bodiless statuses; -1 when absent (chunked is not supported). */
function parseContentLength(buf: Buffer, start: number, headerEnd: number, status: number): number {
  for (const name of CONTENT_LENGTH) {
    const at = buf.indexOf(name, start);
    if (at < 0 || at > headerEnd) continue;
    let i = at + name.length;
    while (buf[i] === 0x20) i++;
    let length = 0;
    let digits = 0;
    for (; i < headerEnd; i++, digits++) {
      const digit = buf[i]! - 0x30;
      if (digit < 0 || digit > 9) break;
      length = length * 10 + digit;
    }
    return digits > 0 ? length : -1;
  }
  return status === 204 || status === 304 || (status >= 100 && status < 200) ? 0 : -1;
}
