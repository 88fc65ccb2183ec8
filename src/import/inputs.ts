import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { Decompress } from 'fzstd';

export type Format = 'jsonl' | 'csv' | 'parquet';
export type Compression = 'none' | 'gzip' | 'zstd';

/** One input of a run: a file, or standard input (`-`). */
export interface Input {
  /** The path as resolved, or `-`. */
  readonly path: string;
  readonly format: Format;
  readonly compression: Compression;
  /** Size on disk (undefined for standard input), for the progress bar's ETA. */
  readonly bytes: number | undefined;
}

const FILE_RE = /\.(jsonl|ndjson|json|csv|parquet)(\.(gz|gzip|zst|zstd))?$/i;

/**
 * The inputs of `weir import PATH`: the file itself, every importable file of a directory in name order (so
 * `events-2024-01.jsonl.gz`, `events-2024-02.jsonl.gz` … go in time order, as exports name them), or standard
 * input. The format comes from the name (or `--format`); compression from the name, else from the first bytes.
 */
export async function listInputs(path: string, format: Format | undefined): Promise<Input[]> {
  if (path === '-') return [{ path: '-', format: format ?? 'jsonl', compression: 'none', bytes: undefined }];
  const abs = resolve(path);
  const st = await stat(abs);
  if (!st.isDirectory()) return [describe(abs, st.size, format)];
  const names = (await readdir(abs)).filter((n) => FILE_RE.test(n) && !n.startsWith('.')).sort();
  const inputs: Input[] = [];
  for (const name of names) {
    const s = await stat(join(abs, name));
    if (s.isFile()) inputs.push(describe(join(abs, name), s.size, format));
  }
  if (inputs.length === 0)
    throw new Error(`${path}: no .jsonl, .ndjson, .json, .csv or .parquet files (optionally .gz or .zst)`);
  return inputs;
}

function describe(path: string, bytes: number, format: Format | undefined): Input {
  const m = FILE_RE.exec(path);
  const ext = m?.[1]?.toLowerCase();
  const comp = m?.[3]?.toLowerCase();
  const fromName: Format = ext === 'csv' ? 'csv' : ext === 'parquet' ? 'parquet' : 'jsonl';
  const compression: Compression = comp?.startsWith('gz')
    ? 'gzip'
    : comp?.startsWith('zst')
      ? 'zstd'
      : 'none';
  return { path, format: format ?? fromName, compression, bytes };
}

/** Counts the bytes read from the file (before decompression): the progress bar's measure of how far it got. */
export interface ByteCounter {
  bytes: number;
}

/**
 * The decompressed bytes of an input. Compression named by the file name is used; otherwise gzip and zstd
 * are recognised by their magic numbers, so `-` (standard input) and misnamed files work too.
 * `offset` seeks (uncompressed files only).
 */
export function openInput(input: Input, counter: ByteCounter, offset = 0): Readable {
  const raw =
    input.path === '-'
      ? process.stdin
      : createReadStream(input.path, { start: offset, highWaterMark: 1 << 20 });
  const counted = raw.pipe(
    new Transform({
      transform(chunk: Buffer, _enc, done) {
        counter.bytes += chunk.length;
        done(null, chunk);
      },
    }),
  );
  raw.on('error', (err: Error) => counted.destroy(err));
  return offset > 0 ? counted : decode(counted, input.compression);
}

/**
 * The decompressed bytes of `source`: by the compression named, else (`none`) by the first bytes, which
 * recognise gzip and zstd in a file not named so, or on standard input.
 */
export function decode(source: Readable, compression: Compression): Readable {
  if (compression === 'gzip') return pipeErr(source, createGunzip());
  if (compression === 'zstd') return pipeErr(source, zstdStream());
  return sniff(source);
}

function pipeErr(from: Readable, to: Transform): Readable {
  from.on('error', (err) => to.destroy(err));
  return from.pipe(to);
}

/** A streaming zstd decoder: fzstd's `Decompress` pushes each decoded chunk as it is complete. */
function zstdStream(): Transform {
  const out: Transform = new Transform({
    transform(chunk: Buffer, _enc, done) {
      try {
        dec.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
        done();
      } catch (err) {
        done(err as Error);
      }
    },
    flush(done) {
      try {
        dec.push(new Uint8Array(0), true);
        done();
      } catch (err) {
        done(err as Error);
      }
    },
  });
  // Made after `out`, which its callback pushes into; `out` calls it only once data flows.
  const dec = new Decompress((chunk) => out.push(Buffer.from(chunk)));
  return out;
}

/** Looks at the first bytes of an input not named as compressed, and decompresses it if they say so. */
function sniff(source: Readable): Readable {
  let decided: Transform | undefined;
  const out = new Transform({
    transform(chunk: Buffer, _enc, done) {
      if (decided === undefined) {
        if (chunk[0] === 0x1f && chunk[1] === 0x8b) decided = createGunzip();
        else if (chunk.length >= 4 && chunk.readUInt32LE(0) === 0xfd2fb528) decided = zstdStream();
        else decided = new Transform({ transform: (c: Buffer, _e, d) => d(null, c) });
        decided.on('data', (d: Buffer) => this.push(d));
        decided.on('error', (err) => this.destroy(err));
      }
      if (decided.write(chunk)) done();
      else decided.once('drain', () => done());
    },
    flush(done) {
      if (decided === undefined) return done();
      decided.once('end', () => done());
      decided.end();
    },
  });
  source.on('error', (err) => out.destroy(err));
  return source.pipe(out);
}
