import {
  brotliDecompress,
  brotliDecompressSync,
  gunzip,
  gunzipSync,
  inflate,
  inflateRaw,
  inflateRawSync,
  inflateSync,
  type InputType,
  type ZlibOptions,
} from 'node:zlib';
import { promisify } from 'node:util';
import { Decompress } from 'fzstd';
import { wellFormedJson } from '../core/well-formed.ts';
import { jsonShape, MAX_JSON_DEPTH } from './decode.ts';
import { MAX_BATCH_ITEMS } from './limits.ts';
import { V1Error } from './v1-errors.ts';

/** Capture V1's body limits (PostHog's defaults): on the wire, and once its Content-Encoding is undone. */
export const V1_MAX_WIRE_BYTES = 10 * 1024 * 1024;
export const V1_MAX_DECODED_BYTES = 50 * 1024 * 1024;

/** The codings V1 takes, one at most (PostHog's capture reads Content-Encoding as a single token). */
export type V1Coding = 'gzip' | 'deflate' | 'br' | 'zstd';

const CODINGS: ReadonlySet<string> = new Set(['gzip', 'deflate', 'br', 'zstd']);

/** The coding a Content-Encoding header names ('' or `identity`: none), or a 415. */
export function v1Coding(header: string): V1Coding | undefined {
  const name = header.trim().toLowerCase();
  if (name === '' || name === 'identity') return undefined;
  if (CODINGS.has(name)) return name as V1Coding;
  throw new V1Error(
    'unsupported_encoding',
    `Content-Encoding '${name.slice(0, 40)}' is not taken: gzip, deflate, br and zstd are.`,
  );
}

/** Small bodies inflate faster inline than through the thread pool. */
const INLINE_BYTES = 64 * 1024;
const LIMIT: ZlibOptions = { maxOutputLength: V1_MAX_DECODED_BYTES };

type Sync = (bytes: InputType, options: ZlibOptions) => Buffer;
type Async = (bytes: InputType, options: ZlibOptions) => Promise<Buffer>;
const SYNC: Readonly<Record<Exclude<V1Coding, 'zstd'>, Sync>> = {
  gzip: gunzipSync,
  deflate: inflateSync,
  br: brotliDecompressSync,
};
const ASYNC: Readonly<Record<Exclude<V1Coding, 'zstd'>, Async>> = {
  gzip: promisify(gunzip),
  deflate: promisify(inflate),
  br: promisify(brotliDecompress),
};
const inflateRawAsync = promisify(inflateRaw);

/**
 * The body's JSON text: its coding undone (at most 50 MiB out), read as strict UTF-8. Synchronous but for a
 * compressed body over 64 KiB, which is inflated on the thread pool.
 */
export function v1BodyText(body: Buffer, coding: V1Coding | undefined): string | Promise<string> {
  if (coding === undefined) return utf8(body);
  if (coding === 'zstd') return utf8(unzstd(body));
  // `deflate` is the zlib format (RFC 9110), but some clients send raw deflate: its first byte tells.
  const raw = coding === 'deflate' && !isZlibHeader(body);
  try {
    if (body.length <= INLINE_BYTES)
      return utf8(raw ? inflateRawSync(body, LIMIT) : SYNC[coding](body, LIMIT));
  } catch (err) {
    throw decodingError(coding, err);
  }
  const inflating = raw ? inflateRawAsync(body, LIMIT) : ASYNC[coding](body, LIMIT);
  return inflating.then(utf8, (err: unknown) => {
    throw decodingError(coding, err);
  });
}

/** Whether the first two bytes are a zlib header (RFC 1950: deflate method, the check bits right). */
function isZlibHeader(b: Buffer): boolean {
  return b.length >= 2 && (b[0]! & 0x0f) === 8 && (b[0]! * 256 + b[1]!) % 31 === 0;
}

/**
 * Parses the body's JSON text as capture's other paths do: measured before parsing (depth, and the number of
 * items its `batch` holds, which is what a request costs), every string made well formed (SPEC §2).
 */
export function parseV1Json(text: string): unknown {
  if (text.trim() === '') throw new V1Error('request_parsing_error', 'The body decodes to no JSON.');
  const shape = jsonShape(text);
  if (shape.depth > MAX_JSON_DEPTH)
    throw new V1Error('request_parsing_error', `The body nests deeper than ${MAX_JSON_DEPTH} levels.`);
  if (shape.items > MAX_BATCH_ITEMS)
    throw new V1Error(
      'payload_too_large',
      `The batch holds more than ${MAX_BATCH_ITEMS.toLocaleString('en')} events; send them in several requests.`,
    );
  try {
    return JSON.parse(wellFormedJson(text));
  } catch (err) {
    throw new V1Error('request_parsing_error', 'The body is not valid JSON.', { cause: err });
  }
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

function utf8(bytes: Buffer): string {
  try {
    return strictUtf8.decode(bytes);
  } catch (err) {
    throw new V1Error('request_parsing_error', 'The body is not valid UTF-8.', { cause: err });
  }
}

function decodingError(coding: V1Coding, err: unknown): V1Error {
  if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError)
    return tooLarge();
  return new V1Error('request_decoding_error', `The body is not valid ${coding} data.`, { cause: err });
}

function tooLarge(): V1Error {
  return new V1Error(
    'payload_too_large',
    `The body decodes to more than ${V1_MAX_DECODED_BYTES / 1024 / 1024} MiB.`,
  );
}

/**
 * zstd, which Node's zlib lacks before Node 22.15, by fzstd (pure JavaScript, on this thread). fzstd
 * allocates a frame's whole window (or content size) as its header declares it, so every frame header is
 * read first and one declaring more than the decoded limit is refused before anything is allocated.
 */
function unzstd(body: Buffer): Buffer {
  const declared = zstdLargestWindow(body);
  if (declared === undefined) throw new V1Error('request_decoding_error', 'The body is not valid zstd data.');
  if (declared > V1_MAX_DECODED_BYTES) throw tooLarge();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const dec = new Decompress((chunk) => {
    size += chunk.length;
    if (size > V1_MAX_DECODED_BYTES) throw tooLarge();
    if (chunk.length > 0) chunks.push(chunk);
  });
  try {
    dec.push(new Uint8Array(body.buffer, body.byteOffset, body.length), true);
  } catch (err) {
    if (err instanceof V1Error) throw err;
    throw new V1Error('request_decoding_error', 'The body is not valid zstd data.', { cause: err });
  }
  return Buffer.concat(chunks, size);
}

const ZSTD_MAGIC = 0xfd2fb528;

/**
 * The largest buffer any frame of a zstd body makes its decoder allocate (window size, or content size for a
 * single-segment frame), found by walking frame and block headers without decoding; undefined when the
 * headers do not hold together (RFC 8878 §3.1).
 */
export function zstdLargestWindow(b: Buffer): number | undefined {
  let at = 0;
  let largest = 0;
  if (b.length === 0) return undefined;
  while (at < b.length) {
    if (at + 4 > b.length) return undefined;
    const magic = b.readUInt32LE(at);
    if ((magic & 0xfffffff0) >>> 0 === 0x184d2a50) {
      // A skippable frame: its length, then that many bytes.
      if (at + 8 > b.length) return undefined;
      at += 8 + b.readUInt32LE(at + 4);
      continue;
    }
    if (magic !== ZSTD_MAGIC || at + 5 > b.length) return undefined;
    const fhd = b[at + 4]!;
    at += 5;
    const fcsFlag = fhd >> 6;
    const singleSegment = (fhd >> 5) & 1;
    const checksum = (fhd >> 2) & 1;
    const dictBytes = [0, 1, 2, 4][fhd & 3]!;
    let window = 0;
    if (!singleSegment) {
      if (at >= b.length) return undefined;
      const wd = b[at++]!;
      const base = 2 ** (10 + (wd >> 3));
      window = base + (base / 8) * (wd & 7);
    }
    at += dictBytes;
    const fcsBytes = fcsFlag === 0 ? singleSegment : [1, 2, 4, 8][fcsFlag]!;
    if (at + fcsBytes > b.length) return undefined;
    let fcs = 0;
    for (let i = fcsBytes - 1; i >= 0; i--) fcs = fcs * 256 + b[at + i]!;
    if (fcsBytes === 2) fcs += 256;
    at += fcsBytes;
    largest = Math.max(largest, singleSegment ? fcs : window);
    for (;;) {
      if (at + 3 > b.length) return undefined;
      const header = b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16);
      at += 3;
      const last = header & 1;
      const type = (header >> 1) & 3;
      const size = header >>> 3;
      if (type === 3) return undefined;
      at += type === 1 ? 1 : size;
      if (last) break;
    }
    if (checksum) at += 4;
    if (at > b.length) return undefined;
  }
  return largest;
}
