/**
 * Runs e2e files again on Node's `http` (WEIR_TEST_HTTP_TRANSPORT=node), each as a subtest: where uWS loads,
 * the rest of the suite runs on uWS, and the transport Weir falls back to on Node 22 and 24 must pass the
 * same tests. Where uWS does not load, every file already runs on Node's `http`, and this adds nothing.
 */
import { join } from 'node:path';
import type { Test } from 'tap';
import { loadUws } from '../../src/http/uws-transport.ts';

export function rerunOnNodeHttp(t: Test, files: readonly string[]): void {
  if (!('uws' in loadUws())) {
    t.pass("uWS does not load on this Node.js: every e2e file runs on Node's http already");
    return;
  }
  const e2e = join(import.meta.dirname, '../e2e');
  for (const name of files) {
    t.spawn(
      process.execPath,
      ['--import=tsx', join(e2e, `${name}.test.ts`)],
      { env: { ...process.env, WEIR_TEST_HTTP_TRANSPORT: 'node' } },
      `${name} on Node's http`,
    );
  }
}
