/**
 * The ceiling of Node's own `http`, as bare-uws-server.ts is uWS's: a server that reads each capture
 * request's whole body and answers 200 `{"status":"Ok"}` on Weir's capture paths, doing nothing else, with
 * the settings Weir's node transport listens with (keep-alive, no Nagle). Weir on Node's http is reported as
 * ratios to this, measured by the same generator in the same run.
 * Usage: `bare-http-server.ts PORT [BODY_FILE]` (127.0.0.1 only). With BODY_FILE it answers every POST, on
 * any path, with that file's bytes instead.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { MODE_PATH } from '../../src/loadgen/payloads.ts';

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  console.error('usage: bare-http-server.ts PORT [BODY_FILE]');
  process.exit(2);
}
const bodyFile = process.argv[3];

const OK_BODY = bodyFile ? readFileSync(bodyFile) : Buffer.from('{"status":"Ok"}');
const OK_HEADERS = { 'Content-Type': 'application/json', 'Content-Length': String(OK_BODY.length) };
const CAPTURE_PATHS = new Set<string>(Object.values(MODE_PATH));

/** As Weir's node transport: an idle connection is closed after this long. */
const IDLE_MS = 10_000;

function capture(req: IncomingMessage, res: ServerResponse): void {
  // Node hands each chunk over as a Buffer of its own, so keeping it is the copy; joining them is what any
  // handler that parses the body must do.
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    if (chunks.length > 1) Buffer.concat(chunks);
    res.writeHead(200, OK_HEADERS).end(OK_BODY);
  });
}

function notFound(res: ServerResponse): void {
  res.writeHead(404, { 'Content-Length': '0' }).end();
}

const server = createServer({ noDelay: true, keepAliveTimeout: IDLE_MS }, (req, res) => {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  if (req.method === 'POST' && (bodyFile !== undefined || CAPTURE_PATHS.has(path))) capture(req, res);
  else if (req.method === 'GET' && path === '/_ready') res.end('ok');
  else {
    req.resume();
    notFound(res);
  }
});
server.keepAliveTimeout = IDLE_MS;
server.on('error', (err) => {
  console.error(`bare http: cannot listen on 127.0.0.1:${port}: ${err.message}`);
  process.exit(1);
});
server.listen(port, '127.0.0.1');

process.on('SIGTERM', () => {
  server.close();
  process.exit(0);
});
