/** Capture's size limits (SPEC §2). */
export const MAX_WIRE_BYTES = 20 * 1024 * 1024;
export const MAX_DECODED_BYTES = 100 * 1024 * 1024;
export const MAX_EVENT_BYTES = 1024 * 1024;
/**
 * Events in one request. What a request costs follows its items more than its bytes (a 3 MB body of a million
 * `{}` is a million objects to build, check and account for), so their number is bounded too, before parsing.
 */
export const MAX_BATCH_ITEMS = 100_000;
/** `distinct_id` longer than this (in characters) is cut. */
export const MAX_DISTINCT_ID_CHARS = 200;
/** `$group_type` / `$group_key` longer than this are refused. */
export const MAX_GROUP_FIELD_CHARS = 400;
/** Events more than this far in the future are clamped to now. */
export const MAX_FUTURE_MS = 23 * 60 * 60 * 1000;
