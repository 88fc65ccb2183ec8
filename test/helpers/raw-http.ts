/**
 * HTTP/1.1 over a bare TCP socket, for what fetch cannot send or cannot show: several requests in one write
 * (pipelining), malformed framing, a client that reads only once it has sent everything, and when the
 * server closes. Responses are parsed just enough to split them (Content-Length or chunked bodies).
 */
import { connect, type Socket } from 'node:net';

export interface RawResponse {
  readonly status: number;
  /** Header names lower-cased. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export class RawConnection {
  readonly socket: Socket;
  /** Set once the server has closed (or reset) the connection; `error` says how. */
  closed = false;
  error: string | undefined;
  #buffer = Buffer.alloc(0);
  #waiters: (() => void)[] = [];

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk]);
      this.#wake();
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      this.error = err.code ?? err.message;
    });
    socket.on('close', () => {
      this.closed = true;
      this.#wake();
    });
  }

  static open(url: string): Promise<RawConnection> {
    const { hostname, port } = new URL(url);
    return new Promise((resolve, reject) => {
      const socket = connect({ host: hostname, port: Number(port), noDelay: true });
      socket.once('error', reject);
      socket.once('connect', () => {
        socket.off('error', reject);
        resolve(new RawConnection(socket));
      });
    });
  }

  /** Writes bytes as they are, in one write; resolves once the kernel has taken them (or rejects). */
  write(data: string | Buffer): Promise<void> {
    return new Promise((resolve, reject) => {
      this.socket.write(data, (err) => (err ? reject(err) : resolve()));
    });
  }

  /** The next response, or undefined once the server has closed without one; fails after `timeoutMs`. */
  async response(timeoutMs = 20_000): Promise<RawResponse | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const parsed = parseResponse(this.#buffer);
      if (parsed) {
        this.#buffer = this.#buffer.subarray(parsed.length);
        return parsed.response;
      }
      if (this.closed) return undefined;
      if (Date.now() > deadline) throw new Error(`no response within ${timeoutMs} ms`);
      await this.#next(deadline);
    }
  }

  /** Resolves once the server has closed the connection; fails after `timeoutMs`. */
  async serverClosed(timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed) {
      if (Date.now() > deadline) throw new Error(`the connection was still open after ${timeoutMs} ms`);
      await this.#next(deadline);
    }
  }

  destroy(): void {
    this.socket.destroy();
  }

  /** Waits for data, a close or the deadline, whichever comes first. */
  #next(deadline: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, Math.max(0, deadline - Date.now()) + 1);
      this.#waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }
}

const HEAD_END = Buffer.from('\r\n\r\n');

function parseResponse(buf: Buffer): { response: RawResponse; length: number } | undefined {
  const headEnd = buf.indexOf(HEAD_END);
  if (headEnd === -1) return undefined;
  const [statusLine, ...lines] = buf.subarray(0, headEnd).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const status = Number(statusLine!.split(' ')[1]);
  let at = headEnd + 4;
  if (headers['transfer-encoding'] === 'chunked') {
    const parts: Buffer[] = [];
    for (;;) {
      const lineEnd = buf.indexOf('\r\n', at);
      if (lineEnd === -1) return undefined;
      const size = parseInt(buf.subarray(at, lineEnd).toString('latin1'), 16);
      if (buf.length < lineEnd + 2 + size + 2) return undefined;
      parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
      at = lineEnd + 2 + size + 2;
      if (size === 0) break;
    }
    return { response: { status, headers, body: Buffer.concat(parts).toString('utf8') }, length: at };
  }
  const length = Number(headers['content-length'] ?? 0);
  if (buf.length < at + length) return undefined;
  return {
    response: { status, headers, body: buf.subarray(at, at + length).toString('utf8') },
    length: at + length,
  };
}

/** A request as bytes: the Host header and, for a body, its Content-Length unless `headers` frame it. */
export function rawRequest(
  method: string,
  path: string,
  body = '',
  headers: Record<string, string> = {},
): string {
  const all: Record<string, string> = { Host: 'weir.test', ...headers };
  const framed = Object.keys(all).some((h) => /^(content-length|transfer-encoding)$/i.test(h));
  if (body !== '' && !framed) all['Content-Length'] = String(Buffer.byteLength(body));
  const head = Object.entries(all).map(([name, value]) => `${name}: ${value}\r\n`);
  return `${method} ${path} HTTP/1.1\r\n${head.join('')}\r\n${body}`;
}
