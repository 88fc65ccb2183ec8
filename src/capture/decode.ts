import LZString from 'lz-string';
import { wellFormedJson, withoutLoneSurrogates } from '../core/well-formed.ts';
import { AppError } from '../errors/app-error.ts';
import { contentCodings, undoCodingsAsync, undoCodingsSync, type Coding } from './content-coding.ts';
import { MAX_BATCH_ITEMS, MAX_DECODED_BYTES } from './limits.ts';
import { NOT_EVENTS } from './payload.ts';

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
/** Small bodies inflate faster inline than through the thread pool. */
const INLINE_INFLATE_BYTES = 64 * 1024;
const GZIP: readonly Coding[] = ['gzip'];

export interface EncodedBody {
  readonly body: Buffer;
  readonly contentType: string;
  readonly contentEncoding: string;
  /** `compression` from the query string, lower-cased, or ''. */
  readonly compression: string;
}

export interface Decoded {
  readonly value: unknown;
  /** Length of the JSON text, in UTF-16 units (bytes for ASCII). */
  readonly decodedLength: number;
}

/**
 * Turns a capture body into the JSON value it carries, whatever way the SDK sent it (SPEC §2 "Bodies"):
 * the codings its Content-Encoding names (gzip, deflate, br; others are a 415), then gzip named by the query
 * or recognised by its magic bytes, lz-string base64, `data=` form fields (JSON, base64 JSON or lz64), and
 * plain JSON as application/json or text/plain. Any failure is a 400 `invalid_payload`; growing past
 * 100 MiB while inflating is a 413. Synchronous (a value or a throw) but for a compressed body over 64 KiB,
 * which is inflated on the thread pool (a promise).
 */
export function decodeBody(input: EncodedBody): Decoded | Promise<Decoded> {
  const codings = contentCodings(input.contentEncoding);
  if (codings.length === 0) return decodeContent(input.body, input, false);
  const gzipped = codings.includes('gzip');
  // Synchronous unless the body is large: most requests are decoded without a promise in between.
  if (input.body.length <= INLINE_INFLATE_BYTES)
    return decodeContent(undoCodingsSync(input.body, codings), input, gzipped);
  return undoCodingsAsync(input.body, codings).then((bytes) => decodeContent(bytes, input, gzipped));
}

/**
 * A body its Content-Encoding is undone from. `ungzipped` says a coding was gzip already: SDKs that name
 * gzip both in the header and in the query compress once.
 */
function decodeContent(bytes: Buffer, input: EncodedBody, ungzipped: boolean): Decoded | Promise<Decoded> {
  let compression = input.compression;

  // A form body carries the payload in `data=`; but `curl -d '{…}'` labels raw JSON as a form too.
  if (
    input.contentType.toLowerCase().startsWith('application/x-www-form-urlencoded') &&
    !looksLikeJson(bytes)
  ) {
    const form = new URLSearchParams(utf8(bytes));
    const data = form.get('data');
    if (data === null) throw invalid('The form body has no data field.');
    compression = (form.get('compression') ?? compression).toLowerCase();
    if (compression === 'lz64' || compression === 'lz-string') return parseJson(lzDecompress(data));
    return parseText(data, true);
  }

  if (compression === 'lz64' || compression === 'lz-string') return parseJson(lzDecompress(utf8(bytes)));

  const gzipped =
    !ungzipped &&
    (compression === 'gzip' ||
      compression === 'gzip-js' ||
      (bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b));
  if (!gzipped) return parseText(utf8(bytes), false);
  if (bytes.length <= INLINE_INFLATE_BYTES) return parseText(utf8(undoCodingsSync(bytes, GZIP)), false);
  return undoCodingsAsync(bytes, GZIP).then((inflated) => parseText(utf8(inflated), false));
}

function looksLikeJson(bytes: Buffer): boolean {
  for (const b of bytes) {
    if (b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09) continue;
    return b === 0x7b || b === 0x5b;
  }
  return false;
}

function lzDecompress(text: string): string {
  let out: string | null;
  try {
    // Some form encoders turn '+' into a space; base64 has no spaces, so put them back.
    out = LZString.decompressFromBase64(text.trim().replaceAll(' ', '+'));
  } catch (err) {
    throw invalid('The body is not valid lz-string base64.', err);
  }
  if (!out) throw invalid('The body is not valid lz-string base64.');
  if (out.length > MAX_DECODED_BYTES) {
    throw new AppError('payload_too_large', { detail: 'The body decodes to more than 100 MiB.' });
  }
  // lz-string decodes to UTF-16 of any kind, lone surrogates included: UTF-8 input cannot hold them.
  return withoutLoneSurrogates(out);
}

/** JSON text, or base64 of JSON text (sendBeacon and form bodies of older SDKs). */
function parseText(text: string, fromForm: boolean): Decoded {
  const first = firstNonSpace(text);
  if (first === '{' || first === '[') return parseJson(text);
  if (first === '') throw invalid('The body is empty.');
  if (isJsonScalar(text)) throw invalid(NOT_EVENTS);
  const b64 = fromForm ? text.trim().replaceAll(' ', '+') : text.trim();
  if (!/^[A-Za-z0-9+/=_-]+$/.test(b64)) throw invalid('The body is not JSON.');
  return parseJson(utf8(Buffer.from(b64, 'base64')));
}

/** Deeper JSON than this is refused: nothing in analytics nests so far, and deeper values break serialisers. */
export const MAX_JSON_DEPTH = 128;

function parseJson(text: string): Decoded {
  // Measured before parsing: a body of a million tiny items parses into a million objects, and the cost of
  // what follows grows with them, not with its bytes.
  const shape = jsonShape(text);
  if (shape.depth > MAX_JSON_DEPTH) throw invalid(`The body nests deeper than ${MAX_JSON_DEPTH} levels.`);
  if (shape.items > MAX_BATCH_ITEMS) {
    throw new AppError('payload_too_large', {
      detail: `The batch holds more than ${MAX_BATCH_ITEMS.toLocaleString('en')} events; send them in several requests.`,
      attr: 'batch',
    });
  }
  let value: unknown;
  try {
    // Every string of the body, keys and values at any depth, parses well formed (SPEC §2).
    value = JSON.parse(wellFormedJson(text));
  } catch (err) {
    throw invalid('The body is not valid JSON.', err);
  }
  return { value, decodedLength: text.length };
}

export interface JsonShape {
  /** The deepest nesting of arrays and objects. */
  readonly depth: number;
  /** Members of the batch: of the top-level array, or of the top-level object's `batch` array (else 0). */
  readonly items: number;
}

const MAX_DEPTH_TRACKED = MAX_JSON_DEPTH + 2;

/**
 * The deepest nesting of arrays and objects in JSON text and how many items its batch holds, in one pass that
 * builds nothing (the text may not be valid JSON: then the figures are only what it looks like). Strings, most
 * of the text, are jumped over with `indexOf` to their closing quote (one not escaped: preceded by an even
 * number of backslashes) rather than read a character at a time, which was 3-4% of capture's main thread in
 * batch mode.
 */
export function jsonShape(text: string): JsonShape {
  let depth = 0;
  let max = 0;
  // Whether each open container is an array, to tell the commas between items from those between fields.
  const arrays = new Uint8Array(MAX_DEPTH_TRACKED + 1);
  // The depth of the array whose members are counted (0: none yet, -1: it has closed), and the last string
  // of the top-level object: the key of the array that opens next, if one does.
  let counted = 0;
  let commas = 0;
  let nonEmpty = false;
  let keyStart = -1;
  let keyEnd = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      let end = text.indexOf('"', i + 1);
      while (end !== -1 && escaped(text, end)) end = text.indexOf('"', end + 1);
      if (end === -1) break;
      if (depth === 1) {
        keyStart = i + 1;
        keyEnd = end;
      }
      if (depth === counted && counted > 0) nonEmpty = true;
      i = end;
    } else if (c === 0x7b || c === 0x5b) {
      if (depth === counted && counted > 0) nonEmpty = true;
      if (++depth > max) max = depth;
      if (depth <= MAX_DEPTH_TRACKED) arrays[depth] = c === 0x5b ? 1 : 0;
      if (c === 0x5b && counted === 0) {
        const top = depth === 1;
        const batch = depth === 2 && arrays[1] === 0 && text.slice(keyStart, keyEnd) === 'batch';
        if (top || batch) counted = depth;
      }
    } else if (c === 0x7d || c === 0x5d) {
      if (depth === counted && counted > 0) counted = -1;
      depth--;
    } else if (c === 0x2c) {
      if (depth === counted && counted > 0) commas++;
    } else if (depth === counted && counted > 0 && c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) {
      nonEmpty = true;
    }
  }
  return { depth: max, items: nonEmpty ? commas + 1 : 0 };
}

/** The deepest nesting of arrays and objects in JSON text (see `jsonShape`). */
export function jsonDepth(text: string): number {
  return jsonShape(text).depth;
}

/** Whether the character at `at` is escaped: an odd number of backslashes right before it. */
function escaped(text: string, at: number): boolean {
  let backslashes = 0;
  for (let k = at - 1; text.charCodeAt(k) === 0x5c; k--) backslashes++;
  return (backslashes & 1) === 1;
}

/**
 * Whether text that does not start with `{` or `[` is JSON all the same: a number, a string, true, false or
 * null. Such text is never base64 of a JSON text (its first character would decode to a byte no JSON text
 * starts with), so the body is JSON that is not events, not undecodable base64.
 */
function isJsonScalar(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function utf8(bytes: Buffer): string {
  try {
    return strictUtf8.decode(bytes);
  } catch (err) {
    throw invalid('The body is not valid UTF-8.', err);
  }
}

function firstNonSpace(text: string): string {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09 && c !== 0xfeff) return text[i]!;
  }
  return '';
}

function invalid(detail: string, cause?: unknown): AppError {
  return new AppError('invalid_payload', { detail, cause });
}
