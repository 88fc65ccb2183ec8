/**
 * The API's e2e files that stream, page and serve files again on Node's `http`
 * (test/helpers/node-http-rerun.ts).
 */
import t from 'tap';
import { rerunOnNodeHttp } from '../helpers/node-http-rerun.ts';

rerunOnNodeHttp(t, ['output-formats', 'endpoints-run', 'console']);
