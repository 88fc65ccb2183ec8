/**
 * The two HTTP transports behind the port (src/http/transport.ts), each on a real socket: the same routing
 * (a static segment over a parameter over `*`, a method's own handler over `any`), the same parameters, bodies, streamed answers and peer address. Weir's routes rely on these holding
 * alike on uWS and on Node's http.
 */
import t from 'tap';
import { nodeTransport } from '../../src/http/node-transport.ts';
import type { HttpApp, HttpResponse, Transport } from '../../src/http/transport.ts';
import { loadUws, uwsTransport } from '../../src/http/uws-transport.ts';

const transports: Transport[] = [nodeTransport()];
const uws = loadUws();
if ('uws' in uws) transports.unshift(uwsTransport(uws.uws));

function answer(res: HttpResponse, text: string): void {
  res.cork(() => {
    res.writeStatus('200 OK');
    res.writeHeader('Content-Type', 'text/plain');
    res.end(text);
  });
}

function routes(app: HttpApp): void {
  app.get('/items/special', (res) => answer(res, 'static'));
  app.get('/items/:id', (res, req) => answer(res, `param ${req.getParameter(0) ?? ''}`));
  app.get('/items/:id/parts/:part', (res, req) =>
    answer(res, `params ${req.getParameter(0) ?? ''} ${req.getParameter(1) ?? ''}`),
  );
  app.any('/items/special', (res) => answer(res, 'any static'));
  app.post('/echo', (res, req) => {
    const query = req.getQuery() ?? '';
    const type = req.getHeader('content-type');
    const chunks: Buffer[] = [];
    res.onAborted(() => undefined);
    res.onData((chunk, isLast) => {
      chunks.push(Buffer.from(Buffer.from(chunk)));
      if (isLast) answer(res, `${query}|${type}|${Buffer.concat(chunks).toString()}`);
    });
  });
  app.get('/peer', (res) => answer(res, Buffer.from(res.getRemoteAddressAsText()).toString()));
  app.get('/stream', (res) => {
    let left = 50;
    const piece = Buffer.alloc(64 * 1024, 0x61);
    const pump = (): boolean => {
      while (left > 0) {
        left--;
        if (!res.write(piece)) return false;
      }
      res.end();
      return true;
    };
    res.onAborted(() => undefined);
    res.onWritable(() => {
      let done = false;
      res.cork(() => (done = pump()));
      return done;
    });
    res.cork(() => {
      res.writeStatus('200 OK');
      pump();
    });
  });
  app.any('/*', (res) => {
    res.cork(() => {
      res.writeStatus('404 Not Found');
      res.end('wildcard');
    });
  });
}

for (const transport of transports) {
  t.test(`${transport.name}`, async (t) => {
    const app = transport.createApp();
    routes(app);
    const server = await transport.listen(app, '127.0.0.1', 0, { sharePort: false });
    t.teardown(() => {
      server.stopListening();
      transport.closeAll(app);
    });
    const get = async (path: string, init?: RequestInit): Promise<[number, string]> => {
      const res = await fetch(`${server.url}${path}`, init);
      return [res.status, await res.text()];
    };
    t.same(await get('/items/special'), [200, 'static'], 'a static segment wins over a parameter');
    t.same(await get('/items/42'), [200, 'param 42'], 'a parameter');
    t.same(await get('/items/a%20b/parts/7'), [200, 'params a%20b 7'], 'parameters as the path has them');
    t.same(await get('/items/special', { method: 'DELETE' }), [200, 'any static'], 'any, on its own path');
    t.same(await get('/items/42', { method: 'DELETE' }), [404, 'wildcard'], 'no method there: the wildcard');
    t.same(await get('/items'), [404, 'wildcard'], 'a prefix of a pattern is not it');
    t.same(await get('/items/42/'), [404, 'wildcard'], 'a trailing slash is another path');
    t.same(
      await get('/echo?x=1&y=2', { method: 'POST', body: 'hello', headers: { 'Content-Type': 'text/x' } }),
      [200, 'x=1&y=2|text/x|hello'],
      'query, header and body',
    );
    t.same(await get('/echo', { method: 'POST' }), [200, '||'], 'no body: one empty last chunk');
    const big = 'b'.repeat(3 * 1024 * 1024);
    t.same(
      await get('/echo', { method: 'POST', body: Buffer.from(big) }),
      [200, `||${big}`],
      'a body in many chunks',
    );
    const [status, peer] = await get('/peer');
    t.equal(status, 200);
    t.match(peer, /^(127\.0\.0\.1|::ffff:127\.0\.0\.1|0000:0000:0000:0000:0000:ffff:7f00:0001)$/, 'the peer');
    const [streamed, body] = await get('/stream');
    t.equal(streamed, 200);
    t.equal(body.length, 50 * 64 * 1024, 'a streamed answer, written as the socket takes it');
  });
}
