/**
 * The HTTP layer and capture's v0 e2e files again on Node's `http` (test/helpers/node-http-rerun.ts); Capture
 * V1's are in http-node-capture-v1.test.ts, so that neither file nears tap's per-file timeout.
 */
import t from 'tap';
import { rerunOnNodeHttp } from '../helpers/node-http-rerun.ts';

rerunOnNodeHttp(t, [
  'http-framing',
  'http-oversize',
  'http-pipelining',
  'capture-http',
  'capture-rejections',
  'capture-encodings',
  'capture-threads',
  'sdk-startup',
  'backpressure',
  'posthog-node',
]);
