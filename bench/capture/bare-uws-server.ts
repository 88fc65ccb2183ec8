/**
 * The ceiling: a bare uWebSockets.js server that reads each capture request's whole body and answers 200
 * `{"status":"Ok"}` on Weir's capture paths, doing nothing else. Weir's figures are reported as ratios to
 * this, measured by the same generator in the same run.
 * Usage: `bare-uws-server.ts PORT [BODY_FILE]` (127.0.0.1 only). With BODY_FILE it answers every POST, on
 * any path, with that file's bytes instead (the endpoints benchmark gives it a cached run's answer).
 */
import { readFileSync } from 'node:fs';
import uWS from 'uWebSockets.js';
import { MODE_PATH } from '../../src/loadgen/payloads.ts';

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  console.error('usage: bare-uws-server.ts PORT [BODY_FILE]');
  process.exit(2);
}
const bodyFile = process.argv[3];

const OK_BODY = bodyFile ? readFileSync(bodyFile) : '{"status":"Ok"}';

function capture(res: uWS.HttpResponse): void {
  let aborted = false;
  res.onAborted(() => {
    aborted = true;
  });
  // Copy each chunk as any real handler must (uWS reuses the ArrayBuffer after the callback), so the
  // ceiling includes reading the body, not only parsing the head.
  const chunks: Buffer[] = [];
  res.onData((chunk, isLast) => {
    chunks.push(Buffer.from(Buffer.from(chunk)));
    if (!isLast || aborted) return;
    if (chunks.length > 1) Buffer.concat(chunks);
    res.cork(() => {
      res.writeStatus('200 OK').writeHeader('Content-Type', 'application/json').end(OK_BODY);
    });
  });
}

const app = uWS.App();
if (bodyFile) app.post('/*', capture);
else for (const path of Object.values(MODE_PATH)) app.post(path, capture);
app.get('/_ready', (res) => {
  res.end('ok');
});

let listenSocket: uWS.us_listen_socket | undefined;
app.listen('127.0.0.1', port, (socket) => {
  if (!socket) {
    console.error(`bare uWS: cannot listen on 127.0.0.1:${port}`);
    process.exit(1);
  }
  listenSocket = socket;
});

process.on('SIGTERM', () => {
  if (listenSocket) uWS.us_listen_socket_close(listenSocket);
  process.exit(0);
});
