/**
 * The answers to the SDKs' start-up calls without HTTP: which shape each `v` / `config` asks for, and the
 * remote config's script form.
 */
import { runInNewContext } from 'node:vm';
import t from 'tap';
import {
  decideAnswer,
  flagsAnswer,
  flagsAnswerWithoutKey,
  remoteConfig,
  remoteConfigScript,
} from '../../src/capture/sdk-answers.ts';

const KEY = 'phc_unit';
const keys = (o: object): string[] => Object.keys(o).sort();
const IDS = ['evaluatedAt', 'requestId'];

t.test('/flags: v 2 and over is the flags map, anything else the older maps', (t) => {
  const v2 = ['errorsWhileComputingFlags', 'flags', ...IDS].sort();
  const v1 = ['errorsWhileComputingFlags', 'featureFlagPayloads', 'featureFlags', ...IDS].sort();
  t.same(keys(flagsAnswer(KEY, { version: '2', config: null })), v2);
  t.same(keys(flagsAnswer(KEY, { version: '10', config: 'false' })), v2);
  for (const version of ['1', '0', '-3', 'two'])
    t.same(keys(flagsAnswer(KEY, { version, config: null })), v1, `v=${JSON.stringify(version)}`);
  t.same(
    keys(flagsAnswer(KEY, { version: null, config: 'false' })),
    v1,
    'config named, v not: the older maps',
  );
  t.end();
});

t.test('/flags: the config comes with config=true, or when neither v nor config is named', (t) => {
  const config = keys(remoteConfig(KEY));
  for (const [query, withConfig] of [
    [{ version: '2', config: 'true' }, true],
    [{ version: '1', config: '1' }, true],
    [{ version: null, config: null }, true],
    [{ version: '', config: ' ' }, true],
    [{ version: '2', config: null }, false],
    [{ version: '2', config: 'false' }, false],
  ] as const) {
    const answer = flagsAnswer(KEY, query);
    const has = config.every((k) => k in answer) && 'toolbarParams' in answer;
    t.equal(has, withConfig, JSON.stringify(query));
  }
  t.same(flagsAnswer(KEY, { version: null, config: null })['flags'], {}, 'neither: the newest shape');
  t.end();
});

t.test('/decide: each version in its shape, always with the config', (t) => {
  const cases: [string | null, Record<string, unknown>][] = [
    [null, { featureFlags: [] }],
    ['1', { featureFlags: [] }],
    ['7x', { featureFlags: [] }],
    ['2', { featureFlags: {} }],
    ['3', { featureFlags: {}, featureFlagPayloads: {}, errorsWhileComputingFlags: false }],
    ['4', { flags: {}, errorsWhileComputingFlags: false }],
  ];
  for (const [version, shape] of cases) {
    const answer = decideAnswer(KEY, version);
    t.match(answer, { ...shape, token: KEY, isAuthenticated: false }, `v=${version}`);
    for (const k of ['featureFlags', 'featureFlagPayloads', 'flags', 'errorsWhileComputingFlags'])
      if (!(k in shape)) t.notOk(k in answer, `v=${version}: no ${k}`);
  }
  t.end();
});

t.test('every answer has its own request id; a GET needs no key', (t) => {
  const a = flagsAnswer(KEY, { version: '2', config: null });
  const b = flagsAnswer(KEY, { version: '2', config: null });
  t.not(a['requestId'], b['requestId']);
  t.match(flagsAnswerWithoutKey(null), { featureFlags: {}, sessionRecording: false });
  t.notOk('token' in flagsAnswerWithoutKey('2'));
  t.end();
});

t.test('the script sets the config under its key, and a key cannot end a <script> element', (t) => {
  const odd = "phc_</script><script>alert('x')</script>";
  const text = remoteConfigScript(odd);
  t.notMatch(text, /<\/script>/i);
  const window: Record<string, unknown> = {};
  runInNewContext(text, { window });
  const loaded = window['_POSTHOG_REMOTE_CONFIG'] as Record<string, unknown>;
  t.same(loaded[odd], { config: remoteConfig(odd), siteApps: [] });
  t.end();
});
