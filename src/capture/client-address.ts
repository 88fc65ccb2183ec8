import type { HttpRequest, HttpResponse } from '../http/transport.ts';

/** What a request says of its client, read while uWS's request is alive (it is gone once the handler returns). */
export interface ClientSeen {
  /** The connection's peer. */
  readonly peer: string;
  /** `Forwarded` (RFC 7239), '' when absent. */
  readonly forwarded: string;
  /** `X-Forwarded-For`, '' when absent. */
  readonly xForwardedFor: string;
}

// Header names as bytes: uWS converts a string name to UTF-8 at every call (see FixedAnswer).
const FORWARDED = Buffer.from('forwarded');
const X_FORWARDED_FOR = Buffer.from('x-forwarded-for');
const LATIN1 = new TextDecoder('latin1');

export function readClient(res: HttpResponse, req: HttpRequest): ClientSeen {
  return {
    peer: LATIN1.decode(res.getRemoteAddressAsText()),
    forwarded: req.getHeader(FORWARDED),
    xForwardedFor: req.getHeader(X_FORWARDED_FOR),
  };
}
