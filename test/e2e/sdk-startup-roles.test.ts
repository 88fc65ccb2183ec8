/**
 * The SDKs' start-up calls answer wherever capture does: `weir start` with capture on threads of its own
 * (the threads serve them, not the main thread behind the proxy), and `weir capture` reading the keys of
 * its owner's catalog. The in-process `weir start` is covered by sdk-startup.test.ts.
 */
import t from 'tap';
import { captureOverJetStream } from '../helpers/roles.ts';
import { RawConnection, rawRequest } from '../helpers/raw-http.ts';
import { ORIGIN, checkStartupCalls } from '../helpers/sdk-startup.ts';
import { startTestWeir } from '../helpers/weir.ts';

t.test('weir start with capture threads', async (t) => {
  const w = await startTestWeir({ WEIR_CAPTURE_THREADS: '2' });
  t.teardown(() => w.close());
  await checkStartupCalls(t, w.url);
  // A refusal of the threads' own proxy (a body over what it passes on) carries CORS headers too.
  const conn = await RawConnection.open(w.url);
  t.teardown(() => conn.destroy());
  const length = String(65 * 1024 * 1024);
  await conn.write(rawRequest('POST', '/api/projects/', '', { Origin: ORIGIN, 'Content-Length': length }));
  const res = await conn.response(5_000);
  t.equal(res?.status, 413, 'the proxy refuses a body over 64 MiB');
  t.equal(res?.headers['access-control-allow-origin'], ORIGIN, 'with CORS headers');
});

t.test('weir capture', async (t) => {
  const { capture } = await captureOverJetStream(t);
  await checkStartupCalls(t, capture.url);
});
