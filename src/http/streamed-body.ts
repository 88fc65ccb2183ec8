/**
 * A 200 whose body is made a piece at a time (a large CSV, NDJSON or Arrow answer), written as the socket
 * takes it: the next piece is made only once uWS has sent the last one (`write` without back-pressure, or
 * `onWritable`), so a slow client holds one piece in memory, not the whole body. A body of one piece is sent
 * with its length; a longer one in chunked transfer encoding.
 */
import type { Headers, Reply } from './reply.ts';

/** Each call gives the next piece of the body, undefined once it is all given. */
export type BodyPieces = () => string | Uint8Array | undefined;

/**
 * Sends `pieces` as the body of a 200 with `headers`. `finished` is called once, when the body is all
 * written, the client went away, or making a later piece threw (the connection is then closed, so the client
 * sees a body cut short rather than a whole one that is wrong). When making the first pieces throws, nothing
 * is sent and the error is thrown, for the caller to answer.
 */
export function sendPieces(
  reply: Reply,
  headers: Headers,
  pieces: BodyPieces,
  finished: (err?: unknown) => void,
): void {
  if (reply.aborted || reply.done) {
    finished();
    return;
  }
  // A throw here leaves nothing sent: the caller answers the error, and `finished` is not called.
  const first = pieces();
  const second = first === undefined ? undefined : pieces();
  if (second === undefined) {
    reply.send(200, first === undefined ? '' : toBuffer(first), headers);
    finished();
    return;
  }
  reply.done = true;
  const res = reply.res;
  let ended = false;
  const end = (err?: unknown): void => {
    if (ended) return;
    ended = true;
    finished(err);
  };
  reply.onAbort(() => end());
  const pending: (string | Uint8Array)[] = [first!, second];
  /** Writes until uWS holds back (false: wait for onWritable) or the body is all written (true). */
  const pump = (): boolean => {
    for (;;) {
      if (reply.aborted || ended) return true;
      let piece: string | Uint8Array | undefined;
      if (pending.length > 0) piece = pending.shift();
      else {
        try {
          piece = pieces();
        } catch (err) {
          end(err);
          res.close();
          return true;
        }
      }
      if (piece === undefined) {
        res.end();
        end();
        return true;
      }
      if (!res.write(piece)) return false;
    }
  };
  res.onWritable(() => {
    let ok = true;
    res.cork(() => {
      ok = pump();
    });
    return ok;
  });
  res.cork(() => {
    res.writeStatus('200 OK');
    for (const name in headers) res.writeHeader(name, headers[name]!);
    pump();
  });
}

function toBuffer(piece: string | Uint8Array): Buffer {
  return typeof piece === 'string'
    ? Buffer.from(piece)
    : Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
}
