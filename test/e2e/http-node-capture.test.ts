/** The HTTP layer and capture's e2e files again on Node's `http` (test/helpers/node-http-rerun.ts). */
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
  'capture-v1',
  'capture-v1-fuzz',
  'capture-v1-roles',
  'posthog-node-v1',
  'capture-ip',
  'posthog-dump-replay',
]);
