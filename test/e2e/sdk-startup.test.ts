/**
 * The calls PostHog's SDKs make at start-up (docs/capture.md "SDK start-up calls"), over plain HTTP against
 * `weir start`: `/flags` and `/decide` in every answer shape, the remote config as JSON and script, their
 * refusals, and the CORS headers of every answer of the capture host, errors included.
 */
import t from 'tap';
import { assertError, base64, gzip } from '../helpers/capture-bodies.ts';
import { RawConnection, rawRequest, type RawResponse } from '../helpers/raw-http.ts';
import {
  ORIGIN,
  UNKNOWN_KEY,
  assertCors,
  assertEvaluation,
  checkStartupCalls,
  flagsBody,
  getFrom,
  postFrom,
  remoteConfigs,
} from '../helpers/sdk-startup.ts';
import { PROJECT_API_KEY, post, request, startTestWeir } from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());

type Body = Record<string, unknown>;
const body = (res: { json: unknown }): Body => res.json as Body;

/** The answer to a POST whose Content-Length is over 20 MiB (sent raw: fetch will not send a false length). */
async function declaredTooLarge(path: string): Promise<RawResponse | undefined> {
  const conn = await RawConnection.open(w.url);
  try {
    const length = String(21 * 1024 * 1024);
    await conn.write(rawRequest('POST', path, '', { Origin: ORIGIN, 'Content-Length': length }));
    return await conn.response(5_000);
  } finally {
    conn.destroy();
  }
}

/** What a `config=true` flags answer and a decide answer add: the remote config and older SDKs' fields. */
const CONFIG_FIELDS = {
  token: PROJECT_API_KEY,
  supportedCompression: ['gzip', 'gzip-js'],
  hasFeatureFlags: false,
  sessionRecording: false,
  heatmaps: false,
  capturePerformance: false,
  autocaptureExceptions: false,
  siteApps: [],
  config: { enable_collect_everything: true },
  toolbarParams: {},
  isAuthenticated: false,
};

t.test('the checks every capture host passes', (t) => checkStartupCalls(t, w.url));

t.test('/flags answers each version in its shape, no flags in any', async (t) => {
  const v2 = body(await postFrom(w.url, '/flags/?v=2', flagsBody()));
  t.same(
    Object.keys(v2).sort(),
    ['errorsWhileComputingFlags', 'evaluatedAt', 'flags', 'requestId'],
    'v=2: flags only',
  );
  t.same(v2['flags'], {});
  assertEvaluation(t, v2, 'v=2');

  const withConfig = body(await postFrom(w.url, '/flags/?v=2&config=true', flagsBody()));
  t.match(withConfig, { ...CONFIG_FIELDS, flags: {} }, 'v=2&config=true: flags and config');
  assertEvaluation(t, withConfig, 'v=2&config=true');

  const bare = body(await postFrom(w.url, '/flags', flagsBody()));
  t.match(bare, { ...CONFIG_FIELDS, flags: {} }, 'neither v nor config: the newest shape, with config');

  for (const path of ['/flags/?v=1', '/flags/?v=1&config=false', '/flags/?config=false', '/flags/?v=abc']) {
    const v1 = body(await postFrom(w.url, path, flagsBody()));
    t.same(v1['featureFlags'], {}, `${path}: featureFlags`);
    t.same(v1['featureFlagPayloads'], {}, `${path}: featureFlagPayloads`);
    t.notOk('flags' in v1, `${path}: no flags map`);
    t.notOk('sessionRecording' in v1, `${path}: no config`);
    assertEvaluation(t, v1, path);
  }
  const v1Config = body(await postFrom(w.url, '/flags/?v=1&config=true', flagsBody()));
  t.match(v1Config, { ...CONFIG_FIELDS, featureFlags: {}, featureFlagPayloads: {} }, 'v=1&config=true');
  const v3 = body(await postFrom(w.url, '/flags/?v=3', flagsBody()));
  t.same(v3['flags'], {}, 'v=3: the flags map');
});

t.test('/decide answers its versions as PostHog does, always with the config', async (t) => {
  const cases: [string, Body][] = [
    ['/decide/', { featureFlags: [] }],
    ['/decide/?v=1', { featureFlags: [] }],
    ['/decide/?v=2', { featureFlags: {} }],
    ['/decide/?v=3', { featureFlags: {}, featureFlagPayloads: {}, errorsWhileComputingFlags: false }],
    ['/decide/?v=4', { flags: {}, errorsWhileComputingFlags: false }],
    ['/decide/?v=9', { flags: {}, errorsWhileComputingFlags: false }],
    ['/decide?v=nope', { featureFlags: [] }],
  ];
  for (const [path, shape] of cases) {
    const res = await postFrom(w.url, path, flagsBody());
    t.equal(res.status, 200, `${path}: status`);
    const json = body(res);
    t.match(json, { ...CONFIG_FIELDS, ...shape }, `${path}: shape`);
    t.same(
      json['featureFlags'] ?? json['flags'],
      Array.isArray(shape['featureFlags']) ? [] : {},
      `${path}: no flags`,
    );
    if (!('featureFlagPayloads' in shape)) t.notOk('featureFlagPayloads' in json, `${path}: no payloads map`);
    t.type(json['requestId'], 'string', `${path}: requestId`);
  }
});

t.test('the key is read however the SDKs send the body', async (t) => {
  const text = JSON.stringify(flagsBody());
  const bodies: [string, string, string | Uint8Array, Record<string, string>][] = [
    ['JSON with token', '/flags/?v=2', text, { 'content-type': 'application/json' }],
    ['api_key', '/flags/?v=2', JSON.stringify({ api_key: PROJECT_API_KEY, distinct_id: 'a' }), {}],
    ['$token', '/flags/?v=2', JSON.stringify({ $token: PROJECT_API_KEY, distinct_id: 'a' }), {}],
    ['base64 JSON', '/flags/?v=2&compression=base64', base64(text), { 'content-type': 'application/json' }],
    [
      'gzip by Content-Encoding',
      '/flags/?v=2',
      gzip(text),
      { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    ],
    ['gzip by query', '/flags/?v=2&compression=gzip', gzip(text), { 'content-type': 'text/plain' }],
    [
      'data= form, JSON',
      '/decide/?v=3',
      `data=${encodeURIComponent(text)}`,
      { 'content-type': 'application/x-www-form-urlencoded' },
    ],
  ];
  for (const [label, path, data, headers] of bodies) {
    const res = await post(`${w.url}${path}`, data, headers);
    t.equal(res.status, 200, `${label}: status`);
    t.equal(res.headers.get('access-control-allow-origin'), '*', `${label}: no Origin, Allow-Origin *`);
  }
});

t.test('flags refusals: the key, the body, its size', async (t) => {
  const cases: [string, string, string | Uint8Array, Record<string, string>, number, string, string][] = [
    [
      'unknown key',
      '/flags/?v=2',
      JSON.stringify(flagsBody(UNKNOWN_KEY)),
      {},
      401,
      'authentication_error',
      'invalid_api_key',
    ],
    [
      'no key',
      '/decide/',
      JSON.stringify({ distinct_id: 'x' }),
      {},
      401,
      'authentication_error',
      'missing_api_key',
    ],
    [
      'two keys',
      '/flags/',
      JSON.stringify({ token: PROJECT_API_KEY, api_key: UNKNOWN_KEY }),
      {},
      401,
      'authentication_error',
      'inconsistent_api_key',
    ],
    ['a JSON array', '/flags/', '[]', {}, 400, 'validation_error', 'invalid_payload'],
    ['a JSON number', '/decide/', '12', {}, 400, 'validation_error', 'invalid_payload'],
    ['not gzip', '/flags/?compression=gzip', 'nope', {}, 400, 'validation_error', 'invalid_payload'],
    ['an empty body', '/flags/', '', {}, 400, 'validation_error', 'invalid_payload'],
    [
      'an unknown coding',
      '/flags/',
      'x',
      { 'content-encoding': 'zstd' },
      415,
      'unsupported_media_type',
      'unsupported_encoding',
    ],
  ];
  for (const [label, path, data, headers, status, type, code] of cases) {
    const res = await postFrom(w.url, path, data, { 'content-type': 'application/json', ...headers });
    assertError(t, res, status, type, code, label);
    assertCors(t, res, label);
  }
  const big = await declaredTooLarge('/flags/');
  t.equal(big?.status, 413, 'over 20 MiB: status');
  t.match(big?.body, /"code":"payload_too_large"/, 'over 20 MiB: code');
  t.equal(big?.headers['access-control-allow-origin'], ORIGIN, 'over 20 MiB: CORS');
});

t.test('GET /flags answers without a key, as PostHog does', async (t) => {
  const res = await getFrom(w.url, '/flags/?v=2');
  t.equal(res.status, 200);
  assertCors(t, res, 'GET /flags');
  t.match(body(res), { flags: {}, sessionRecording: false, supportedCompression: ['gzip', 'gzip-js'] });
  const legacy = body(await getFrom(w.url, '/decide'));
  t.match(legacy, { featureFlags: {}, isAuthenticated: false });
});

t.test('the remote config: nothing enabled, the same as JSON and as the script', async (t) => {
  const { json, script, fromScript } = await remoteConfigs(w.url);
  t.match(json.headers.get('cache-control'), /max-age=\d+/, 'config: cacheable');
  t.same(
    json.json,
    {
      token: PROJECT_API_KEY,
      supportedCompression: ['gzip', 'gzip-js'],
      hasFeatureFlags: false,
      captureDeadClicks: false,
      capturePerformance: false,
      autocapture_opt_out: false,
      autocaptureExceptions: false,
      analytics: { endpoint: '/i/v0/e/' },
      elementsChainAsString: true,
      errorTracking: { autocaptureExceptions: false, suppressionRules: [] },
      logs: { captureConsoleLogs: false },
      sessionRecording: false,
      heatmaps: false,
      conversations: false,
      productTours: false,
      defaultIdentifiedOnly: true,
      siteApps: [],
    },
    'every field says off, or what Weir does',
  );
  t.same(fromScript, { config: json.json, siteApps: [] });
  t.match(script.text, /^\(function\(\) \{/, 'the script is a self-calling function, as PostHog serves it');
  const noOrigin = await request(`${w.url}/array/${PROJECT_API_KEY}/config.js`);
  t.equal(noOrigin.headers.get('access-control-allow-origin'), '*', 'a script tag without crossorigin: *');
  const missing = await getFrom(w.url, `/array/${UNKNOWN_KEY}/config`);
  t.match(body(missing)['detail'], /API key/, 'the 404 says why');
  const post405 = await postFrom(w.url, `/array/${PROJECT_API_KEY}/config`, {});
  assertError(t, post405, 405, 'method_not_allowed', 'method_not_allowed', 'POST config');
  t.equal(post405.headers.get('allow'), 'GET, OPTIONS');
  assertCors(t, post405, 'POST config');
});

t.test('every answer of the capture host carries CORS headers, errors included', async (t) => {
  const noOrigin = await request(`${w.url}/no/such/path`);
  t.equal(noOrigin.status, 404);
  t.equal(noOrigin.headers.get('access-control-allow-origin'), '*', '404 without an Origin: *');
  t.equal(noOrigin.headers.get('access-control-allow-credentials'), null, 'and no credentials with *');
  const preflight404 = await request(`${w.url}/no/such/path`, {
    method: 'OPTIONS',
    headers: { origin: ORIGIN },
  });
  t.equal(preflight404.status, 404, 'a preflight of a path nobody serves is its 404');
  assertCors(t, preflight404, 'OPTIONS 404');
  const capture413 = await declaredTooLarge('/batch/');
  t.equal(capture413?.status, 413, 'capture 413: status');
  t.equal(capture413?.headers['access-control-allow-origin'], ORIGIN, 'capture 413: CORS');
  const capture415 = await postFrom(w.url, '/e/', 'x', {
    'content-type': 'application/json',
    'content-encoding': 'zstd',
  });
  t.equal(capture415.status, 415);
  assertCors(t, capture415, 'capture 415');
  const methods = await request(`${w.url}/flags/`, { method: 'DELETE', headers: { origin: ORIGIN } });
  t.equal(methods.status, 405);
  t.equal(methods.headers.get('allow'), 'GET, POST, OPTIONS');
  assertCors(t, methods, 'DELETE /flags');
  const accepted = await postFrom(w.url, '/i/v0/e/', {
    api_key: PROJECT_API_KEY,
    event: 'cors',
    distinct_id: 'c',
  });
  t.equal(accepted.status, 200);
  assertCors(t, accepted, 'capture 200');
});
