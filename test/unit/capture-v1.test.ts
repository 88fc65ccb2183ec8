import { readFileSync } from 'node:fs';
import t from 'tap';
import { readOptions } from '../../src/capture/v1-envelope.ts';
import { v1Coding, zstdLargestWindow } from '../../src/capture/v1-decode.ts';
import { toV1Error, V1Error, V1_ERRORS } from '../../src/capture/v1-errors.ts';
import { checkV1Headers, sdkLib, type V1RawHeaders } from '../../src/capture/v1-headers.ts';
import { canonicalUuid, parseRfc3339 } from '../../src/capture/v1-time.ts';
import type { Project, ProjectKeys } from '../../src/core/ports.ts';
import { AppError } from '../../src/errors/app-error.ts';
import { zstdRaw } from '../helpers/capture-v1.ts';

t.test('every V1 error tag is in docs/capture-v1.md with its status', (t) => {
  const doc = readFileSync(new URL('../../docs/capture-v1.md', import.meta.url), 'utf8');
  for (const [tag, { status }] of Object.entries(V1_ERRORS)) {
    const row = doc.split('\n').find((line) => new RegExp(`^\\|\\s*\`${tag}\`\\s*\\|`).test(line));
    t.ok(row, `${tag} has a row`);
    t.match(row ?? '', new RegExp(`\\|\\s*${status}\\s*\\|`), `${tag} row names status ${status}`);
  }
  t.end();
});

t.test('a V1 refusal body is PostHog’s three fields', (t) => {
  const err = new V1Error('empty_batch');
  t.equal(err.status, 400);
  t.same(JSON.parse(err.body()), {
    error: 'empty_batch',
    error_description: V1_ERRORS.empty_batch.description,
    error_uri: 'https://posthog.com/docs/api',
  });
  t.equal(toV1Error(new AppError('unavailable', { retryAfterSeconds: 3 })).tag, 'service_unavailable');
  t.equal(toV1Error(new AppError('unavailable', { retryAfterSeconds: 3 })).retryAfterSeconds, 3);
  t.equal(toV1Error(new AppError('payload_too_large')).status, 413);
  const foreign = toV1Error(new Error('connection to clickhouse://admin:secret@db failed'));
  t.equal(foreign.status, 500);
  t.notMatch(foreign.body(), /secret|clickhouse/, 'a foreign error says nothing of its cause');
  t.end();
});

t.test('RFC 3339', (t) => {
  const cases: [string, number | undefined][] = [
    ['2026-12-02T02:17:11Z', Date.UTC(2026, 11, 2, 2, 17, 11)],
    ['2026-12-02t02:17:11.5z', Date.UTC(2026, 11, 2, 2, 17, 11, 500)],
    ['2026-12-02 02:17:11.123456+00:00', Date.UTC(2026, 11, 2, 2, 17, 11, 123)],
    ['2026-12-02T07:47:11+05:30', Date.UTC(2026, 11, 2, 2, 17, 11)],
    ['2026-12-01T22:17:11-04:00', Date.UTC(2026, 11, 2, 2, 17, 11)],
    ['2024-02-29T00:00:00Z', Date.UTC(2024, 1, 29)],
    ['0050-01-01T00:00:00Z', Date.parse('0050-01-01T00:00:00Z')],
    ['2026-02-29T00:00:00Z', undefined],
    ['2026-12-02T02:17:11', undefined],
    ['2026-12-02', undefined],
    ['2026-12-02T24:00:00Z', undefined],
    ['2026-12-02T02:17:60Z', undefined],
    ['2026-13-02T02:17:11Z', undefined],
    ['2026-12-02T02:17:11+24:00', undefined],
    [' 2026-12-02T02:17:11Z', undefined],
    ['1700000000000', undefined],
  ];
  for (const [text, want] of cases) t.equal(parseRfc3339(text), want, text);
  t.end();
});

t.test('UUIDs in the forms a UUID parser takes, as their canonical text', (t) => {
  const u = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
  for (const form of [u, u.toUpperCase(), u.replaceAll('-', ''), `{${u}}`, `urn:uuid:${u}`, `URN:UUID:${u}`])
    t.equal(canonicalUuid(form), u, form);
  for (const bad of [
    '',
    'abc',
    `${u}0`,
    `{${u.replaceAll('-', '')}}`,
    `urn:uuid:${u.replaceAll('-', '')}`,
    'g'.repeat(32),
  ])
    t.equal(canonicalUuid(bad), undefined, bad);
  t.end();
});

t.test('$lib from PostHog-Sdk-Info', (t) => {
  t.same(sdkLib('posthog-node/5.70.0'), { name: 'posthog-node', version: '5.70.0' });
  t.same(sdkLib(' a/b / 1.0 '), { name: 'a/b', version: '1.0' }, 'split at the last slash, trimmed');
  t.equal(sdkLib('no-slash'), undefined);
  t.equal(sdkLib('name/'), undefined);
  t.equal(sdkLib('/1.0'), undefined);
  t.equal(sdkLib(`${'x'.repeat(200)}/1`), undefined, 'over 200 bytes');
  t.end();
});

t.test('options coerced as PostHog does, each to its property', (t) => {
  t.same(readOptions(undefined), {});
  t.same(readOptions(null), {});
  t.same(
    readOptions({
      cookieless_mode: ' TRUE ',
      disable_skew_correction: 0,
      process_person_profile: '0',
      product_tour_id: 42,
      other: [1],
    }),
    {
      $cookieless_mode: true,
      $ignore_sent_at: false,
      $process_person_profile: false,
      $product_tour_id: '42',
    },
  );
  t.same(readOptions({ cookieless_mode: null, product_tour_id: null }), {});
  t.same(readOptions({ cookieless_mode: 0.5 }), { $cookieless_mode: true }, 'any non-zero number is true');
  for (const bad of [
    'x',
    [],
    1,
    { cookieless_mode: 'yes' },
    { process_person_profile: {} },
    { product_tour_id: 1.5 },
    { product_tour_id: true },
  ])
    t.equal(readOptions(bad), undefined, JSON.stringify(bad));
  t.end();
});

t.test('Content-Encoding: one coding of four', (t) => {
  t.equal(v1Coding(''), undefined);
  t.equal(v1Coding('identity'), undefined);
  t.equal(v1Coding(' GZIP '), 'gzip');
  t.equal(v1Coding('zstd'), 'zstd');
  for (const bad of ['x-gzip', 'gzip, br', 'compress'])
    t.equal(
      (() => {
        try {
          v1Coding(bad);
          return undefined;
        } catch (err) {
          return (err as V1Error).tag;
        }
      })(),
      'unsupported_encoding',
      bad,
    );
  t.end();
});

t.test('zstd frame headers are read before any is decoded', (t) => {
  t.equal(zstdLargestWindow(zstdRaw(Buffer.from('hello'))), 5);
  t.equal(zstdLargestWindow(zstdRaw(Buffer.from('hi'), 1 << 30)), 1 << 30, 'the declared size');
  const two = Buffer.concat([zstdRaw(Buffer.from('a')), zstdRaw(Buffer.alloc(3), 1 << 29)]);
  t.equal(zstdLargestWindow(two), 1 << 29, 'the largest of every frame');
  t.equal(zstdLargestWindow(Buffer.from('not zstd')), undefined);
  t.equal(zstdLargestWindow(zstdRaw(Buffer.from('hello')).subarray(0, 10)), undefined, 'cut short');
  t.end();
});

t.test('headers, in PostHog’s order', (t) => {
  const project: Project = {
    id: 1,
    name: 'p',
    apiToken: 'phc_ok',
    createdAt: '',
    anonymizeIps: false,
    eventRetentionDays: null,
    suppressedDistinctIds: [],
    dataDeletedAt: null,
  };
  const catalog: ProjectKeys = {
    projectByApiToken: (token) => (token === 'phc_ok' ? project : undefined),
    close: async () => {},
  };
  const good: V1RawHeaders = {
    authorization: 'Bearer phc_ok',
    contentType: 'application/json',
    contentEncoding: '',
    contentLength: '10',
    sdkInfo: 'posthog-node/5.70.0',
    attempt: '1',
    requestId: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
    requestTimestamp: '2026-12-02T02:17:11.000Z',
    userAgent: 'posthog-node/5.70.0',
    origin: '',
  };
  const meta = checkV1Headers(good, catalog);
  t.equal(meta.project, project);
  t.equal(meta.sentAt, Date.UTC(2026, 11, 2, 2, 17, 11));
  t.same(meta.lib, { name: 'posthog-node', version: '5.70.0' });
  const refusal = (h: Partial<V1RawHeaders>): string | undefined => {
    try {
      checkV1Headers({ ...good, ...h }, catalog);
      return undefined;
    } catch (err) {
      return (err as V1Error).tag;
    }
  };
  t.equal(refusal({ authorization: '', sdkInfo: '' }), 'missing_authorization', 'before missing headers');
  t.equal(refusal({ sdkInfo: '', contentType: 'text/plain' }), 'missing_required_headers', 'before values');
  t.equal(refusal({ authorization: 'Basic x' }), 'invalid_header_value');
  t.equal(refusal({ authorization: 'Bearer phx_personal' }), 'invalid_api_token');
  t.equal(refusal({ authorization: 'BEARER phc_ok' }), undefined, 'the scheme in any case');
  t.equal(refusal({ authorization: 'Bearer phc_other' }), 'invalid_api_token');
  t.equal(refusal({ contentType: 'application/json; charset=utf-8' }), undefined);
  t.equal(refusal({ contentType: 'text/plain' }), 'unsupported_content_type');
  t.equal(refusal({ contentEncoding: 'compress' }), 'unsupported_encoding');
  t.equal(refusal({ attempt: '0' }), 'invalid_header_value');
  t.equal(refusal({ attempt: '4294967296' }), 'invalid_header_value');
  t.equal(refusal({ requestId: 'abc' }), 'invalid_header_value');
  t.equal(refusal({ requestTimestamp: '2026-12-02' }), 'invalid_header_value');
  t.equal(refusal({ userAgent: 'caf\u00e9' }), 'invalid_header_value', 'not visible ASCII');
  t.equal(refusal({ sdkInfo: 'nonsense' }), undefined, 'an Sdk-Info that does not parse refuses nothing');
  t.end();
});
