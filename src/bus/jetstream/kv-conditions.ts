import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';

/**
 * Whether a publish was refused because its `lastSequence` condition no longer held: another write landed
 * first. The KV buckets that write conditionally (the ingest leases, the shared person state) retry or report
 * a conflict on it; any other error is a fault.
 */
export function isWrongLastSequence(err: unknown): boolean {
  return (
    err instanceof JetStreamApiError &&
    (err.code === JetStreamApiCodes.StreamWrongLastSequence ||
      err.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}
