import type { Project, ProjectKeys } from '../core/ports.ts';
import type { HttpRequest } from '../http/transport.ts';
import { v1Coding, type V1Coding } from './v1-decode.ts';
import { V1Error } from './v1-errors.ts';
import { canonicalUuid, parseRfc3339 } from './v1-time.ts';

/** The request headers Capture V1 reads, as the client sent them ('' when absent). */
export interface V1RawHeaders {
  readonly authorization: string;
  readonly contentType: string;
  readonly contentEncoding: string;
  readonly contentLength: string;
  readonly sdkInfo: string;
  readonly attempt: string;
  readonly requestId: string;
  readonly requestTimestamp: string;
  readonly userAgent: string;
  readonly origin: string;
}

/** What the headers of an accepted request say. */
export interface V1RequestMeta {
  readonly project: Project;
  readonly coding: V1Coding | undefined;
  /** `PostHog-Request-Timestamp`: the client's clock when it sent this attempt, for skew correction. */
  readonly sentAt: number;
  /** `$lib` / `$lib_version` from `PostHog-Sdk-Info`, when it parses. */
  readonly lib: { readonly name: string; readonly version: string } | undefined;
}

/** Read synchronously: uWS's request is gone once the handler returns. */
export function readV1Headers(req: HttpRequest): V1RawHeaders {
  return {
    authorization: req.getHeader('authorization'),
    contentType: req.getHeader('content-type'),
    contentEncoding: req.getHeader('content-encoding'),
    contentLength: req.getHeader('content-length'),
    sdkInfo: req.getHeader('posthog-sdk-info'),
    attempt: req.getHeader('posthog-attempt'),
    requestId: req.getHeader('posthog-request-id'),
    requestTimestamp: req.getHeader('posthog-request-timestamp'),
    userAgent: req.getHeader('user-agent'),
    origin: req.getHeader('origin'),
  };
}

/** The headers V1 requires besides Authorization, by the name a client reads in the refusal. */
const REQUIRED: readonly (readonly [keyof V1RawHeaders, string])[] = [
  ['contentType', 'Content-Type'],
  ['sdkInfo', 'PostHog-Sdk-Info'],
  ['attempt', 'PostHog-Attempt'],
  ['requestId', 'PostHog-Request-Id'],
  ['requestTimestamp', 'PostHog-Request-Timestamp'],
  ['userAgent', 'User-Agent'],
];

/** Visible ASCII, space and tab: what an HTTP library can read as text (PostHog's `to_str`). */
const VISIBLE = /^[\t\x20-\x7e]*$/;
const BEARER = /^bearer /i;
const MAX_SDK_INFO_BYTES = 200;
const MAX_ATTEMPT = 2 ** 32 - 1;

/**
 * Checks the headers before the body is read, in PostHog's order: no Authorization is a 401; then every
 * required header that is missing, named in one 400; then each value; then whether the key names a project.
 */
export function checkV1Headers(h: V1RawHeaders, catalog: ProjectKeys): V1RequestMeta {
  if (h.authorization.trim() === '') throw new V1Error('missing_authorization');
  const missing = REQUIRED.filter(([field]) => h[field].trim() === '').map(([, name]) => name);
  if (missing.length > 0)
    throw new V1Error('missing_required_headers', `Missing required headers: ${missing.join(', ')}.`);
  for (const [field, name] of [
    ['authorization', 'Authorization'],
    ...REQUIRED,
    ['contentEncoding', 'Content-Encoding'],
  ] as const) {
    if (!VISIBLE.test(h[field]))
      throw new V1Error('invalid_header_value', `${name} holds characters that are not visible ASCII.`);
  }

  const auth = h.authorization.trim();
  if (!BEARER.test(auth))
    throw new V1Error('invalid_header_value', 'Authorization must be Bearer <project API key>.');
  const token = auth.slice(7).trim();
  checkTokenFormat(token);

  const mediaType = h.contentType.split(';')[0]!.trim().toLowerCase();
  if (mediaType !== 'application/json')
    throw new V1Error(
      'unsupported_content_type',
      `Content-Type '${mediaType.slice(0, 60)}' is not taken: send application/json.`,
    );
  const coding = v1Coding(h.contentEncoding);

  const attempt = h.attempt.trim();
  if (!/^\d{1,10}$/.test(attempt) || Number(attempt) < 1 || Number(attempt) > MAX_ATTEMPT)
    throw new V1Error('invalid_header_value', 'PostHog-Attempt must be a whole number of at least 1.');
  if (canonicalUuid(h.requestId.trim()) === undefined)
    throw new V1Error('invalid_header_value', 'PostHog-Request-Id must be a UUID.');
  const sentAt = parseRfc3339(h.requestTimestamp.trim());
  if (sentAt === undefined)
    throw new V1Error('invalid_header_value', 'PostHog-Request-Timestamp must be an RFC 3339 date-time.');

  const project = catalog.projectByApiToken(token);
  if (!project) throw new V1Error('invalid_api_token');
  return { project, coding, sentAt, lib: sdkLib(h.sdkInfo) };
}

/**
 * PostHog's token rules, for a refusal that says what is wrong (any of them is a 401, as is a well-formed key
 * that names no project). No length bound: a bootstrap key may be longer than PostHog's 64 bytes, and a key
 * that names a project is taken however long.
 */
function checkTokenFormat(token: string): void {
  if (token === '') throw new V1Error('invalid_api_token', 'The Bearer token is empty.');
  if (token.startsWith('phx_'))
    throw new V1Error(
      'invalid_api_token',
      'A personal API key (phx_) was sent; capture takes the project API key (phc_).',
    );
}

/**
 * `$lib` and `$lib_version` from `PostHog-Sdk-Info` (`posthog-node/5.70.0`): split at the last `/`, both
 * halves trimmed and not empty, the whole at most 200 bytes; otherwise none, and the request goes on.
 */
export function sdkLib(info: string): V1RequestMeta['lib'] {
  if (Buffer.byteLength(info) > MAX_SDK_INFO_BYTES) return undefined;
  const slash = info.lastIndexOf('/');
  if (slash === -1) return undefined;
  const name = info.slice(0, slash).trim();
  const version = info.slice(slash + 1).trim();
  return name !== '' && version !== '' ? { name, version } : undefined;
}
