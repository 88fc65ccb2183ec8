/**
 * The web console (SPEC §5, `GET /console`): a page a person opens to browse projects and endpoints, run them
 * with charts, query ad hoc and watch capture's counters. It is static: plain HTML, JS modules and CSS from
 * this folder, and Chart.js's UMD build from node_modules, read once at start. The page holds no data of its
 * own; it calls the management, query and metrics routes of the same origin with the key a person signs in with.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { HttpRequest, HttpResponse, HttpApp } from '../http/transport.ts';
import type { Logger } from '../core/logger.ts';
import { AppError } from '../errors/app-error.ts';
import { Reply, type Headers } from '../http/reply.ts';

/** The console's own files, beside this module, served under `/console/` by their names. */
const OWN_FILES = [
  'console.js',
  'api.js',
  'dom.js',
  'charts.js',
  'results.js',
  'metrics.js',
  'console.css',
  'favicon.svg',
] as const;

/** Where Chart.js's UMD build is served; index.html loads it before the modules, which read `window.Chart`. */
export const CHART_PATH = '/console/vendor/chart.umd.js';

/**
 * Only this origin's scripts, styles and connections; no inline script or style, no plugins, no framing.
 * Data a page shows is text, so even a value that slipped into markup could not run.
 */
export const CONSOLE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const TYPES: Readonly<Record<string, string>> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
};

interface StaticFile {
  readonly body: Buffer;
  /** The body gzipped, when that makes it smaller. */
  readonly gzipped: Buffer | undefined;
  readonly headers: Headers;
  readonly etag: string;
}

export interface ConsoleDeps {
  readonly logger: Logger;
}

/**
 * Registers `/console` (and `/console/`), its files under `/console/`, and a 404 for any other path there.
 * Files are revalidated on each load (`no-cache` with an ETag): their names carry no version, and a page of an
 * older Weir must not keep calling a newer one's API with old code.
 */
export function registerConsoleRoutes(app: HttpApp, deps: ConsoleDeps): void {
  const here = import.meta.dirname;
  const page = staticFile(readFileSync(join(here, 'index.html')), TYPES['html']!);
  const files = new Map<string, StaticFile>();
  for (const name of OWN_FILES) {
    const ext = name.slice(name.lastIndexOf('.') + 1);
    files.set(`/console/${name}`, staticFile(readFileSync(join(here, name)), TYPES[ext]!));
  }
  const chart = chartJs();
  if (chart === undefined)
    deps.logger.warn('Chart.js is not installed: the console shows results as tables only');
  else files.set(CHART_PATH, staticFile(chart, TYPES['js']!));

  for (const path of ['/console', '/console/']) serve(app, path, page);
  for (const [path, file] of files) serve(app, path, file);
  app.any('/console/*', (res) => {
    new Reply(res).error(new AppError('not_found', { detail: 'The console has no file of this name.' }));
  });
}

/** Chart.js's UMD build, found from the package's own entry point (its `exports` hide `dist/`). */
function chartJs(): Buffer | undefined {
  let entry: string;
  try {
    entry = createRequire(import.meta.url).resolve('chart.js');
  } catch {
    return undefined;
  }
  for (const name of ['chart.umd.min.js', 'chart.umd.js']) {
    try {
      // Without its source map comment: the map is not served, and a browser's tools would ask for it.
      const text = readFileSync(join(dirname(entry), name), 'utf8');
      return Buffer.from(text.replace(/\n\/\/# sourceMappingURL=\S*\s*$/, '\n'));
    } catch {
      // the other name: Chart.js renamed its UMD build within v4
    }
  }
  return undefined;
}

function staticFile(body: Buffer, contentType: string): StaticFile {
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
  const zipped = body.length > 1024 ? gzipSync(body, { level: 9 }) : undefined;
  return {
    body,
    gzipped: zipped !== undefined && zipped.length < body.length ? zipped : undefined,
    etag,
    headers: {
      'Content-Type': contentType,
      'Cache-Control': 'no-cache',
      ETag: etag,
      'Content-Security-Policy': CONSOLE_CSP,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
      Vary: 'Accept-Encoding',
    },
  };
}

function serve(app: HttpApp, path: string, file: StaticFile): void {
  app.get(path, (res, req) => answer(res, req, file, true));
  app.head(path, (res, req) => answer(res, req, file, false));
  app.any(path, (res) => {
    new Reply(res).error(
      new AppError('method_not_allowed', { detail: 'This route takes GET and HEAD only.' }),
      {
        Allow: 'GET, HEAD',
      },
    );
  });
}

function answer(res: HttpResponse, req: HttpRequest, file: StaticFile, withBody: boolean): void {
  const reply = new Reply(res);
  const matched = etagMatched(req.getHeader('if-none-match'), file.etag);
  if (matched !== undefined) {
    reply.send(304, undefined, { ETag: matched, 'Cache-Control': 'no-cache', Vary: 'Accept-Encoding' });
    return;
  }
  const zipped = /\bgzip\b/.test(req.getHeader('accept-encoding')) ? file.gzipped : undefined;
  const body = zipped ?? file.body;
  // Each encoding is its own representation, with its own tag; either revalidates the file.
  const headers = zipped
    ? { ...file.headers, 'Content-Encoding': 'gzip', ETag: gzipTag(file.etag) }
    : file.headers;
  if (withBody) {
    reply.send(200, body, headers);
    return;
  }
  // HEAD: the headers a GET would have, its length included, and no body.
  res.writeStatus('200 OK');
  for (const name in headers) res.writeHeader(name, headers[name]!);
  res.endWithoutBody(body.length);
}

/** The tag of `If-None-Match` that names this file (either encoding), or undefined. */
function etagMatched(header: string, etag: string): string | undefined {
  if (header === '') return undefined;
  const zipped = gzipTag(etag);
  for (const raw of header.split(',')) {
    const tag = raw.trim().replace(/^W\//, '');
    if (tag === etag || tag === '*') return etag;
    if (tag === zipped) return zipped;
  }
  return undefined;
}

function gzipTag(etag: string): string {
  return `${etag.slice(0, -1)}-gz"`;
}
