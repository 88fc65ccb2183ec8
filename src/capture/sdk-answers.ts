/**
 * What Weir answers to the calls PostHog's SDKs make at start-up (docs/capture.md "SDK start-up calls"):
 * the remote config, and feature flags in each shape an SDK version reads. Weir has no feature flags and
 * nothing configured remotely, so every answer is that of a PostHog project with none: no flags, no
 * recordings, no surveys, nothing for the SDK to load.
 */
import { randomUUID } from 'node:crypto';

type Json = null | boolean | number | string | readonly Json[] | { readonly [key: string]: Json };
export type JsonObject = { readonly [key: string]: Json };

/**
 * The remote config of a project (`/array/<key>/config`): PostHog's field names, each saying "off" or
 * what is true of Weir's capture. Events go to `/i/v0/e/`; autocapture sends `$elements_chain` as text,
 * which ingest reads as it reads `$elements`; anonymous visitors get no person until identified, the
 * default of every new PostHog project. `surveys` is left out: posthog-js loads its surveys script whenever
 * the field is there, `false` included, from the host it captures to, which serves no scripts.
 */
export function remoteConfig(token: string): JsonObject {
  return {
    token,
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
  };
}

/**
 * The config part of a `/flags?config=true` or `/decide` answer: the remote config and the fields older
 * SDKs read from `/decide` (the toolbar's, and autocapture's `enable_collect_everything`).
 */
function decideConfig(token: string): JsonObject {
  return {
    ...remoteConfig(token),
    config: { enable_collect_everything: true },
    toolbarParams: {},
    isAuthenticated: false,
  };
}

/**
 * The script form of the remote config (`/array/<key>/config.js`), which posthog-js loads before it
 * falls back to the JSON: it sets `window._POSTHOG_REMOTE_CONFIG[key]` and has no site apps to add.
 */
export function remoteConfigScript(token: string): string {
  const key = scriptJson(token);
  const config = scriptJson(remoteConfig(token));
  return (
    '(function() {\n' +
    '  window._POSTHOG_REMOTE_CONFIG = window._POSTHOG_REMOTE_CONFIG || {};\n' +
    `  window._POSTHOG_REMOTE_CONFIG[${key}] = { config: ${config}, siteApps: [] };\n` +
    '})();\n'
  );
}

/** JSON as a JavaScript literal that cannot end a `<script>` element should the text be inlined. */
function scriptJson(value: Json): string {
  return JSON.stringify(value).replaceAll('<', '\\u003c');
}

interface Evaluation {
  readonly errorsWhileComputingFlags: false;
  readonly requestId: string;
  readonly evaluatedAt: number;
}

/** The fields every flags answer carries: no evaluation failed, and its request's identity and time. */
function evaluation(): Evaluation {
  return { errorsWhileComputingFlags: false, requestId: randomUUID(), evaluatedAt: Date.now() };
}

/** How a `/flags` request asks for its answer: `?v=` and `?config=`. */
export interface FlagsQuery {
  readonly version: string | null;
  readonly config: string | null;
}

/**
 * A `/flags` answer with no flags, in the shape the request asks for, as PostHog's flags service shapes
 * it: `v` 2 or more is the `flags` map of flag details, anything else the older `featureFlags` and
 * `featureFlagPayloads` maps; `config=true` adds the config. A request that names neither is taken as
 * the newest, `v=2` with the config.
 */
export function flagsAnswer(token: string, query: FlagsQuery): JsonObject {
  // An empty parameter (`?v=`) is one not named, as PostHog reads it.
  const named = (raw: string | null): string | null => (raw?.trim() ? raw : null);
  const neither = named(query.version) === null && named(query.config) === null;
  const version = neither ? 2 : parseVersion(query.version);
  const withConfig = neither || isTrue(query.config);
  const flags: JsonObject = version >= 2 ? { flags: {} } : { featureFlags: {}, featureFlagPayloads: {} };
  return { ...(withConfig ? decideConfig(token) : {}), ...flags, ...evaluation() };
}

/**
 * The answer to `GET /flags`, which carries no key: no flags and the little config that holds for every
 * project, in the shape of `?v=` (PostHog's flags service answers a GET so, without reading a key).
 */
export function flagsAnswerWithoutKey(versionParam: string | null): JsonObject {
  const flags: JsonObject =
    parseVersion(versionParam) >= 2 ? { flags: {} } : { featureFlags: {}, featureFlagPayloads: {} };
  return {
    supportedCompression: ['gzip', 'gzip-js'],
    config: { enable_collect_everything: true },
    toolbarParams: {},
    isAuthenticated: false,
    sessionRecording: false,
    ...flags,
    ...evaluation(),
  };
}

/**
 * A `/decide` answer with no flags, always with the config, in the shape of its `v` as PostHog answers
 * decide: 1 (or none, or one it does not know) the list of enabled flags, 2 the map of enabled flags,
 * 3 the map with payloads, 4 and over the `flags` map of flag details.
 */
export function decideAnswer(token: string, versionParam: string | null): JsonObject {
  const version = parseVersion(versionParam);
  const config = decideConfig(token);
  const { errorsWhileComputingFlags, ...ids } = evaluation();
  if (version >= 4) return { ...config, flags: {}, errorsWhileComputingFlags, ...ids };
  if (version === 3)
    return { ...config, featureFlags: {}, featureFlagPayloads: {}, errorsWhileComputingFlags, ...ids };
  if (version === 2) return { ...config, featureFlags: {}, ...ids };
  return { ...config, featureFlags: [], ...ids };
}

/** `v` as a whole number; 1 when absent or not a number, as PostHog reads it. */
function parseVersion(raw: string | null): number {
  if (raw === null || !/^\s*\d{1,9}\s*$/.test(raw)) return 1;
  return Number(raw);
}

function isTrue(raw: string | null): boolean {
  return raw !== null && ['true', '1', 'yes', 'on'].includes(raw.trim().toLowerCase());
}
