/**
 * Checks of the SDKs' start-up calls (docs/capture.md "SDK start-up calls") against any capture host: the
 * answers posthog-js and the server SDKs read, with the CORS headers a browser needs, errors included. The
 * same checks run against `weir start`, its capture threads and `weir capture`.
 */
import { runInNewContext } from 'node:vm';
import type { Test } from 'tap';
import { assertError, base64, form, gzip } from './capture-bodies.ts';
import { PROJECT_API_KEY, request, type HttpResult } from './weir.ts';

export const ORIGIN = 'http://127.0.0.1:49152';
export const UNKNOWN_KEY = 'phc_nobody_has_this_key';

/** A flags request body as posthog-js sends it (abridged). */
export function flagsBody(token = PROJECT_API_KEY, distinctId = 'anon-1'): Record<string, unknown> {
  return {
    token,
    distinct_id: distinctId,
    groups: {},
    person_properties: {},
    $anon_distinct_id: distinctId,
  };
}

/** The CORS headers of an answer to a request from ORIGIN. */
export function assertCors(t: Test, res: HttpResult, label: string): void {
  t.equal(res.headers.get('access-control-allow-origin'), ORIGIN, `${label}: Allow-Origin echoes the Origin`);
  t.equal(res.headers.get('access-control-allow-credentials'), 'true', `${label}: credentials`);
  t.match(res.headers.get('vary') ?? '', /Origin/, `${label}: Vary: Origin`);
}

/** Sends `body` (an object as JSON) to `path` from ORIGIN. */
export function postFrom(
  base: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = { 'content-type': 'application/json' },
): Promise<HttpResult> {
  const data = typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body);
  return request(`${base}${path}`, { method: 'POST', body: data, headers: { origin: ORIGIN, ...headers } });
}

export function getFrom(base: string, path: string, method = 'GET'): Promise<HttpResult> {
  return request(`${base}${path}`, { method, headers: { origin: ORIGIN } });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The fields of every flags answer: nothing failed, a request id, an evaluation time. */
export function assertEvaluation(t: Test, json: Record<string, unknown>, label: string): void {
  t.equal(json['errorsWhileComputingFlags'], false, `${label}: errorsWhileComputingFlags`);
  t.match(json['requestId'], UUID, `${label}: requestId is a uuid`);
  t.type(json['evaluatedAt'], 'number', `${label}: evaluatedAt`);
  t.notOk('quotaLimited' in json, `${label}: not quota limited`);
}

/** The remote config of PROJECT_API_KEY as the JSON route and the script each give it. */
export async function remoteConfigs(
  base: string,
): Promise<{ json: HttpResult; script: HttpResult; fromScript: unknown }> {
  const json = await getFrom(base, `/array/${PROJECT_API_KEY}/config`);
  const script = await getFrom(base, `/array/${PROJECT_API_KEY}/config.js`);
  const window: Record<string, unknown> = {};
  runInNewContext(script.text, { window });
  const loaded = window['_POSTHOG_REMOTE_CONFIG'] as Record<string, { config: unknown; siteApps: unknown }>;
  return { json, script, fromScript: loaded[PROJECT_API_KEY] };
}

/** The checks every capture host must pass: each route answers, in its shape, with CORS, errors too. */
export async function checkStartupCalls(t: Test, base: string): Promise<void> {
  const v2 = await postFrom(
    base,
    '/flags/?v=2&compression=base64',
    form({ data: base64(JSON.stringify(flagsBody())) }),
    {
      'content-type': 'application/x-www-form-urlencoded',
    },
  );
  t.equal(v2.status, 200, 'flags v2 (posthog-js base64 form): status');
  assertCors(t, v2, 'flags v2');
  const flags = v2.json as Record<string, unknown>;
  t.same(flags['flags'], {}, 'flags v2: no flags');
  assertEvaluation(t, flags, 'flags v2');

  const gz = await postFrom(
    base,
    '/flags/?v=2&config=true&compression=gzip-js',
    gzip(JSON.stringify(flagsBody())),
    {
      'content-type': 'text/plain',
    },
  );
  t.equal(gz.status, 200, 'flags gzip with config: status');
  t.match(
    gz.json,
    { flags: {}, hasFeatureFlags: false, sessionRecording: false },
    'flags gzip with config: body',
  );

  const decide = await postFrom(base, '/decide/?v=3', flagsBody());
  t.equal(decide.status, 200, 'decide v3: status');
  t.match(
    decide.json,
    { featureFlags: {}, featureFlagPayloads: {}, sessionRecording: false },
    'decide v3: body',
  );
  assertCors(t, decide, 'decide v3');

  const { json, script, fromScript } = await remoteConfigs(base);
  t.equal(json.status, 200, 'config: status');
  t.match(json.headers.get('content-type'), /^application\/json/, 'config: JSON');
  assertCors(t, json, 'config');
  t.match(json.json, {
    token: PROJECT_API_KEY,
    hasFeatureFlags: false,
    sessionRecording: false,
  });
  t.equal(script.status, 200, 'config.js: status');
  t.match(script.headers.get('content-type'), /^application\/javascript/, 'config.js: script');
  assertCors(t, script, 'config.js');
  t.same(fromScript, { config: json.json, siteApps: [] }, 'config.js sets the same config');

  for (const path of [
    '/flags/',
    '/decide/',
    `/array/${PROJECT_API_KEY}/config`,
    `/array/${PROJECT_API_KEY}/config.js`,
  ]) {
    const pre = await request(`${base}${path}`, {
      method: 'OPTIONS',
      headers: {
        origin: ORIGIN,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    t.equal(pre.status, 204, `OPTIONS ${path}: status`);
    assertCors(t, pre, `OPTIONS ${path}`);
    t.match(pre.headers.get('access-control-allow-methods') ?? '', /GET/, `OPTIONS ${path}: methods`);
  }

  // Refusals: the SPEC §1 body, and CORS headers so that the page's script can read them.
  const refusals: [string, Promise<HttpResult>, number, string, string][] = [
    [
      'flags, unknown key',
      postFrom(base, '/flags/?v=2', flagsBody(UNKNOWN_KEY)),
      401,
      'authentication_error',
      'invalid_api_key',
    ],
    [
      'flags, no key',
      postFrom(base, '/flags/?v=2', { distinct_id: 'x' }),
      401,
      'authentication_error',
      'missing_api_key',
    ],
    ['decide, bad JSON', postFrom(base, '/decide/', '{'), 400, 'validation_error', 'invalid_payload'],
    ['config, unknown key', getFrom(base, `/array/${UNKNOWN_KEY}/config`), 404, 'not_found', 'not_found'],
    [
      'config.js, unknown key',
      getFrom(base, `/array/${UNKNOWN_KEY}/config.js`),
      404,
      'not_found',
      'not_found',
    ],
    ['PUT flags', getFrom(base, '/flags/', 'PUT'), 405, 'method_not_allowed', 'method_not_allowed'],
    ['unknown path', getFrom(base, '/static/surveys.js'), 404, 'not_found', 'not_found'],
    [
      'capture, unknown key',
      postFrom(base, '/e/', { api_key: UNKNOWN_KEY, event: 'x', distinct_id: 'y' }),
      401,
      'authentication_error',
      'invalid_api_key',
    ],
    ['capture, bad body', postFrom(base, '/i/v0/e/', '{'), 400, 'validation_error', 'invalid_payload'],
    ['capture, GET', getFrom(base, '/batch/'), 405, 'method_not_allowed', 'method_not_allowed'],
  ];
  for (const [label, pending, status, type, code] of refusals) {
    const res = await pending;
    assertError(t, res, status, type, code, label);
    assertCors(t, res, label);
  }
}
