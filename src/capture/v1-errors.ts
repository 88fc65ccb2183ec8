import { toAppError } from '../errors/app-error.ts';

/**
 * The whole-batch refusals of Capture V1 (`POST /i/v1/analytics/events`), in PostHog's shape rather than
 * SPEC §1's: V1 clients (posthog-node, posthog-python, posthog-go) read `{error, error_description,
 * error_uri}` and branch on the status alone. The tags are PostHog capture's own; docs/capture-v1.md lists
 * each with its status, and a unit test keeps the two in step.
 */
export const V1_ERRORS = {
  missing_required_headers: { status: 400, description: 'Required headers are missing.' },
  invalid_header_value: { status: 400, description: 'A header has a value that is not valid.' },
  request_decoding_error: { status: 400, description: 'The body does not decode with its Content-Encoding.' },
  request_parsing_error: { status: 400, description: 'The body is not a valid Capture V1 batch.' },
  empty_body: { status: 400, description: 'The request has no body.' },
  empty_batch: { status: 400, description: 'The batch holds no events.' },
  invalid_batch: { status: 400, description: 'created_at is not an RFC 3339 date-time.' },
  missing_event_uuid: { status: 400, description: 'An event has an empty uuid.' },
  invalid_event_uuid: { status: 400, description: 'An event has a uuid that is not a UUID.' },
  duplicate_event_uuid: { status: 400, description: 'Two events of the batch have the same uuid.' },
  missing_authorization: {
    status: 401,
    description: 'No Authorization header; send Authorization: Bearer <project API key>.',
  },
  invalid_api_token: { status: 401, description: 'The project API key names no project.' },
  method_not_allowed: { status: 405, description: 'Capture V1 takes POST only.' },
  payload_too_large: { status: 413, description: 'The request body is too large.' },
  unsupported_content_type: { status: 415, description: 'Content-Type must be application/json.' },
  unsupported_encoding: {
    status: 415,
    description: 'Content-Encoding must be gzip, deflate, br or zstd, or none.',
  },
  internal_error: { status: 500, description: 'Weir hit an internal error; it has been logged.' },
  service_unavailable: {
    status: 503,
    description: 'Weir cannot take events right now; retry after the time in Retry-After.',
  },
} as const satisfies Record<string, { status: number; description: string }>;

export type V1ErrorTag = keyof typeof V1_ERRORS;

/** Where PostHog's V1 error bodies point; Weir's own page would be no use to a client branching on status. */
const ERROR_URI = 'https://posthog.com/docs/api';

/** A Capture V1 whole-batch refusal: its tag, status and a sentence for a person. */
export class V1Error extends Error {
  readonly tag: V1ErrorTag;
  readonly status: number;
  readonly retryAfterSeconds: number | undefined;

  constructor(
    tag: V1ErrorTag,
    description?: string,
    options: { retryAfterSeconds?: number; cause?: unknown } = {},
  ) {
    super(description ?? V1_ERRORS[tag].description, { cause: options.cause });
    this.name = 'V1Error';
    this.tag = tag;
    this.status = V1_ERRORS[tag].status;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  body(): string {
    return JSON.stringify({ error: this.tag, error_description: this.message, error_uri: ERROR_URI });
  }
}

/**
 * Any failure as a V1 refusal. Weir's own errors met on the way (a body over a limit, the store unable to
 * serve) keep their status under the V1 tag of the same meaning; anything unforeseen is a 500 that says
 * nothing of its cause, which goes to the log.
 */
export function toV1Error(err: unknown): V1Error {
  if (err instanceof V1Error) return err;
  const app = toAppError(err);
  if (app.status === 413) return new V1Error('payload_too_large', app.message);
  if (app.status === 503)
    return new V1Error('service_unavailable', undefined, {
      retryAfterSeconds: app.retryAfterSeconds ?? 1,
      cause: app,
    });
  return new V1Error('internal_error', undefined, { retryAfterSeconds: 1, cause: app.cause ?? app });
}
