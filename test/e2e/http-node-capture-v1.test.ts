/**
 * Capture V1's e2e files, the client's IP and PostHog's request dump again on Node's `http`
 * (test/helpers/node-http-rerun.ts).
 */
import t from 'tap';
import { rerunOnNodeHttp } from '../helpers/node-http-rerun.ts';

rerunOnNodeHttp(t, [
  'capture-v1',
  'capture-v1-fuzz',
  'capture-v1-roles',
  'posthog-node-v1',
  'capture-ip',
  'posthog-dump-replay',
]);
