import {
  brotliDecompress,
  brotliDecompressSync,
  gunzip,
  gunzipSync,
  inflate,
  inflateSync,
  type InputType,
  type ZlibOptions,
} from 'node:zlib';
import { promisify } from 'node:util';
import { AppError } from '../errors/app-error.ts';
import { MAX_DECODED_BYTES } from './limits.ts';

/** The content codings capture undoes (RFC 9110 §8.4.1); `deflate` is the zlib format, as the RFC has it. */
export type Coding = 'gzip' | 'deflate' | 'br';

const NONE: readonly Coding[] = [];
const GZIP_ONLY: readonly Coding[] = ['gzip'];
const TAKEN = 'gzip, deflate and br (or identity)';
const LIMIT = { maxOutputLength: MAX_DECODED_BYTES };

type Sync = (bytes: InputType, options: ZlibOptions) => Buffer;
type Async = (bytes: InputType, options: ZlibOptions) => Promise<Buffer>;

const SYNC: Readonly<Record<Coding, Sync>> = {
  gzip: gunzipSync,
  deflate: inflateSync,
  br: brotliDecompressSync,
};
const ASYNC: Readonly<Record<Coding, Async>> = {
  gzip: promisify(gunzip),
  deflate: promisify(inflate),
  br: promisify(brotliDecompress),
};

/**
 * The codings a Content-Encoding header names, in the order they were applied. `identity` (no coding) is
 * left out; a coding capture does not take is a 415 that names the ones it takes, rather than a body read
 * as plain text and refused for a reason that misleads.
 */
export function contentCodings(header: string): readonly Coding[] {
  if (header === '') return NONE;
  if (header === 'gzip') return GZIP_ONLY; // posthog-node's: no list to split
  const out: Coding[] = [];
  for (const part of header.toLowerCase().split(',')) {
    const name = part.trim();
    if (name === '' || name === 'identity') continue;
    if (name === 'gzip' || name === 'x-gzip') out.push('gzip');
    else if (name === 'deflate' || name === 'br') out.push(name);
    else
      throw new AppError('unsupported_encoding', {
        detail: `Content-Encoding '${name.slice(0, 40)}' is not taken; capture takes ${TAKEN}.`,
        attr: 'Content-Encoding',
      });
  }
  return out;
}

/** Undoes the codings, last applied first, each limited to 100 MiB of output. */
export function undoCodingsSync(bytes: Buffer, codings: readonly Coding[]): Buffer {
  let out = bytes;
  for (let i = codings.length - 1; i >= 0; i--) {
    const coding = codings[i]!;
    try {
      out = SYNC[coding](out, LIMIT);
    } catch (err) {
      throw decodingError(coding, err);
    }
  }
  return out;
}

/** `undoCodingsSync` on the thread pool, for a large body. */
export async function undoCodingsAsync(bytes: Buffer, codings: readonly Coding[]): Promise<Buffer> {
  let out = bytes;
  for (let i = codings.length - 1; i >= 0; i--) {
    const coding = codings[i]!;
    try {
      out = await ASYNC[coding](out, LIMIT);
    } catch (err) {
      throw decodingError(coding, err);
    }
  }
  return out;
}

function decodingError(coding: Coding, err: unknown): AppError {
  if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) {
    return new AppError('payload_too_large', { detail: 'The body inflates to more than 100 MiB.' });
  }
  return new AppError('invalid_payload', {
    detail: `The body is not valid ${coding === 'deflate' ? 'deflate (zlib)' : coding} data.`,
    cause: err,
  });
}
