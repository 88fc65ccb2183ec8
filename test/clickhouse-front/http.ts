/**
 * ClickHouse's HTTP interface in front of the engine (test-only, see README.md): what a request means (the
 * query from the URL and the body, `param_*`, settings, database, format, credentials, compression) and how a
 * server answers (headers, status of an error, its text).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import { Engine, ServerError, type Answer, type Statement } from './engine.ts';

export interface FrontOptions {
  readonly engine: Engine;
  /** The password of user `default`; any password is taken when none is set. */
  readonly password?: string;
}

/** URL parameters that are not settings (ClickHouse's HTTPHandler reserves the same names). */
const RESERVED = new Set([
  'query',
  'compress',
  'decompress',
  'user',
  'password',
  'quota_key',
  'query_id',
  'stacktrace',
  'role',
  'buffer_size',
  'wait_end_of_query',
  'session_id',
  'session_timeout',
  'session_check',
  'client_protocol_version',
  'close_session',
  'database',
  'default_format',
]);

/**
 * Settings of the HTTP layer: the front acts on the compression ones itself, and none of them reaches the
 * engine (they change nothing in chDB, which has no HTTP layer).
 */
const HTTP_SETTINGS = new Set([
  'enable_http_compression',
  'http_zlib_compression_level',
  'http_response_buffer_size',
  'http_wait_end_of_query',
  'send_progress_in_http_headers',
  'http_headers_progress_interval_ms',
  'http_write_exception_in_output_format',
  'http_native_compression_disable_checksumming_on_decompress',
  'add_http_cors_header',
  'cancel_http_readonly_queries_on_client_close',
]);

/** HTTP status of an error, by the error code's name (ClickHouse's exceptionCodeToHTTPStatus). */
const STATUS_BY_NAME: Readonly<Record<string, number>> = (() => {
  const table: Record<string, number> = { REQUIRED_PASSWORD: 401 };
  const groups: [number, string[]][] = [
    [
      403,
      ['UNKNOWN_USER', 'WRONG_PASSWORD', 'AUTHENTICATION_FAILED', 'SET_NON_GRANTED_ROLE', 'ACCESS_DENIED'],
    ],
    [
      400,
      [
        'BAD_ARGUMENTS',
        'CANNOT_COMPILE_REGEXP',
        'CANNOT_PARSE_TEXT',
        'CANNOT_PARSE_ESCAPE_SEQUENCE',
        'CANNOT_PARSE_QUOTED_STRING',
        'CANNOT_PARSE_DATE',
        'CANNOT_PARSE_DATETIME',
        'CANNOT_PARSE_NUMBER',
        'CANNOT_PARSE_DOMAIN_VALUE_FROM_STRING',
        'CANNOT_PARSE_IPV4',
        'CANNOT_PARSE_IPV6',
        'CANNOT_PARSE_INPUT_ASSERTION_FAILED',
        'CANNOT_PARSE_UUID',
        'DUPLICATE_COLUMN',
        'ILLEGAL_COLUMN',
        'UNKNOWN_ELEMENT_IN_AST',
        'UNKNOWN_TYPE_OF_AST_NODE',
        'THERE_IS_NO_COLUMN',
        'TOO_DEEP_AST',
        'TOO_BIG_AST',
        'UNEXPECTED_AST_STRUCTURE',
        'SYNTAX_ERROR',
        'INCORRECT_DATA',
        'TYPE_MISMATCH',
        'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE',
      ],
    ],
    [
      404,
      [
        'UNKNOWN_TABLE',
        'UNKNOWN_FUNCTION',
        'UNKNOWN_IDENTIFIER',
        'UNKNOWN_TYPE',
        'UNKNOWN_STORAGE',
        'UNKNOWN_DATABASE',
        'UNKNOWN_SETTING',
        'UNKNOWN_DIRECTION_OF_SORTING',
        'UNKNOWN_AGGREGATE_FUNCTION',
        'UNKNOWN_FORMAT',
        'UNKNOWN_DATABASE_ENGINE',
        'UNKNOWN_TYPE_OF_QUERY',
        'UNKNOWN_ROLE',
      ],
    ],
    [413, ['QUERY_IS_TOO_LARGE']],
    [501, ['NOT_IMPLEMENTED']],
    [503, ['SOCKET_TIMEOUT', 'CANNOT_OPEN_FILE', 'CANNOT_SCHEDULE_TASK']],
    [411, ['HTTP_LENGTH_REQUIRED']],
    [408, ['TIMEOUT_EXCEEDED']],
    [415, ['UNSUPPORTED_MEDIA_TYPE']],
  ];
  for (const [status, names] of groups) for (const n of names) table[n] = status;
  return table;
})();

export function httpStatus(codeName: string): number {
  return STATUS_BY_NAME[codeName] ?? 500;
}

const gunzip = promisify(zlib.gunzip);
const inflate = promisify(zlib.inflate);
const brotliDecompress = promisify(zlib.brotliDecompress);

/** The request body as sent, decoded from its Content-Encoding. */
async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks);
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (raw.length === 0 || encoding === '' || encoding === 'identity') return raw;
  try {
    if (encoding === 'gzip' || encoding === 'x-gzip') return await gunzip(raw);
    if (encoding === 'deflate') return await inflate(raw);
    if (encoding === 'br') return await brotliDecompress(raw);
  } catch (err) {
    throw new ServerError(
      271,
      'CANNOT_DECOMPRESS',
      `Cannot decompress the request body (${encoding}): ${(err as Error).message}`,
    );
  }
  throw new ServerError(
    1,
    'UNSUPPORTED_METHOD',
    `Unknown HTTP Content-Encoding '${encoding}' (the front reads gzip, deflate, br)`,
  );
}

/** The fields of a multipart/form-data body (ClickHouse takes `query` and `param_*` from it). */
function multipartFields(body: Buffer, contentType: string): Map<string, string> {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType);
  const fields = new Map<string, string>();
  if (!boundary) throw new ServerError(36, 'BAD_ARGUMENTS', 'multipart/form-data without a boundary');
  const delimiter = `--${boundary[1] ?? boundary[2]!.trim()}`;
  for (const part of body.toString('utf8').split(delimiter).slice(1)) {
    if (part.startsWith('--')) break;
    const split = part.indexOf('\r\n\r\n');
    if (split < 0) continue;
    const headers = part.slice(0, split);
    const name = /name="([^"]*)"/i.exec(headers)?.[1];
    if (name === undefined) continue;
    if (/filename=/i.test(headers))
      throw new ServerError(
        48,
        'NOT_IMPLEMENTED',
        'External data (multipart files) is not implemented by the front',
      );
    fields.set(name, part.slice(split + 4).replace(/\r\n$/, ''));
  }
  return fields;
}

/** Who the request says it is, from Basic auth, X-ClickHouse-User/Key, or `user`/`password` URL parameters. */
function credentials(req: IncomingMessage, url: URL): { user: string; password: string } {
  const headerUser = req.headers['x-clickhouse-user'];
  const headerKey = req.headers['x-clickhouse-key'];
  const authorization = req.headers.authorization;
  const fromParams = url.searchParams.has('user') || url.searchParams.has('password');
  if (typeof headerUser === 'string' || typeof headerKey === 'string') {
    if ((authorization && /^basic /i.test(authorization)) || fromParams)
      throw new ServerError(
        194,
        'REQUIRED_PASSWORD',
        'Invalid authentication: it is not allowed to use X-ClickHouse HTTP headers and other authentication methods simultaneously',
      );
    return { user: String(headerUser ?? 'default'), password: String(headerKey ?? '') };
  }
  if (authorization && /^basic /i.test(authorization)) {
    if (fromParams)
      throw new ServerError(
        194,
        'REQUIRED_PASSWORD',
        'Invalid authentication: it is not allowed to use Authorization HTTP header and authentication via parameters simultaneously',
      );
    const decoded = Buffer.from(authorization.slice(6).trim(), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon < 0
      ? { user: decoded, password: '' }
      : { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  return {
    user: url.searchParams.get('user') ?? 'default',
    password: url.searchParams.get('password') ?? '',
  };
}

function authenticate(req: IncomingMessage, url: URL, password: string | undefined): void {
  const who = credentials(req, url);
  if (who.user !== 'default' || (password !== undefined && who.password !== password))
    throw new ServerError(
      516,
      'AUTHENTICATION_FAILED',
      `${who.user}: Authentication failed: password is incorrect, or there is no user with such name`,
    );
}

/** The output format a SELECT names in a trailing FORMAT clause, if any. */
function trailingFormat(sql: string): string | undefined {
  return /\bFORMAT\s+([A-Za-z][A-Za-z0-9_]*)\s*;?\s*$/i.exec(sql)?.[1];
}

function contentType(format: string): string {
  const f = format.toLowerCase();
  if (f.startsWith('json') || f === 'ndjson' || f === 'jsonl') return 'application/json; charset=UTF-8';
  if (f.startsWith('tabseparated') || f.startsWith('tsv')) return 'text/tab-separated-values; charset=UTF-8';
  if (f.startsWith('csv'))
    return `text/csv; charset=UTF-8; header=${f.includes('withnames') ? 'present' : 'absent'}`;
  if (['parquet', 'arrow', 'arrowstream', 'orc', 'native', 'avro'].includes(f) || f.startsWith('rowbinary'))
    return 'application/octet-stream';
  return 'text/plain; charset=UTF-8';
}

/** The response encoding a request may get: it asked (`enable_http_compression`) and accepts one we write. */
function responseEncoding(req: IncomingMessage, settings: ReadonlyMap<string, string>): string | undefined {
  const enabled = settings.get('enable_http_compression');
  if (enabled !== '1' && enabled?.toLowerCase() !== 'true') return undefined;
  const accepted = String(req.headers['accept-encoding'] ?? '')
    .split(',')
    .map((e) => e.split(';')[0]!.trim().toLowerCase());
  return ['gzip', 'deflate', 'br'].find((e) => accepted.includes(e));
}

function compress(bytes: Uint8Array, encoding: string, level: number): Promise<Buffer> {
  const input = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return new Promise((resolve, reject) => {
    const done = (err: Error | null, out: Buffer): void => (err ? reject(err) : resolve(out));
    if (encoding === 'gzip') zlib.gzip(input, { level }, done);
    else if (encoding === 'deflate') zlib.deflate(input, { level }, done);
    else zlib.brotliCompress(input, {}, done);
  });
}

/** One request, read: what to run, and how to answer. */
interface Request {
  readonly statement: Statement | undefined;
  readonly queryId: string;
  readonly format: string;
  readonly settings: ReadonlyMap<string, string>;
}

/** Whether an INSERT's text names where its rows are but holds none of them (`… FORMAT X` or `… VALUES`). */
function insertWithoutRows(sql: string): boolean {
  return /^INSERT\b/i.test(sql) && /(?:\bFORMAT\s+[A-Za-z][A-Za-z0-9_]*|\bVALUES)\s*$/i.test(sql);
}

async function readRequest(req: IncomingMessage, url: URL): Promise<Request> {
  const headerQueryId = req.headers['x-clickhouse-query-id'];
  const queryId =
    url.searchParams.get('query_id') || (typeof headerQueryId === 'string' && headerQueryId) || randomUUID();
  const headerFormat = req.headers['x-clickhouse-format'];
  const format =
    url.searchParams.get('default_format') ||
    (typeof headerFormat === 'string' && headerFormat) ||
    'TabSeparated';
  const headerDatabase = req.headers['x-clickhouse-database'];
  const database =
    url.searchParams.get('database') || (typeof headerDatabase === 'string' && headerDatabase) || 'default';
  for (const p of ['compress', 'decompress'])
    if (url.searchParams.get(p) === '1')
      throw new ServerError(
        48,
        'NOT_IMPLEMENTED',
        `${p}=1 (ClickHouse's native compression) is not implemented by the front`,
      );

  const params: Record<string, string> = {};
  const settings = new Map<string, string>();
  for (const [key, value] of url.searchParams) {
    if (key === '') continue;
    if (key.startsWith('param_')) params[key.slice('param_'.length)] = value;
    else if (!RESERVED.has(key)) settings.set(key, value);
  }

  let urlQuery = url.searchParams.get('query') ?? '';
  let body = req.method === 'POST' ? await readBody(req) : Buffer.alloc(0);
  const type = req.headers['content-type'] ?? '';
  const multipart = /^multipart\/form-data/i.test(type);
  if (multipart) {
    for (const [name, value] of multipartFields(body, type)) {
      if (name === 'query') urlQuery = urlQuery ? urlQuery : value;
      else if (name.startsWith('param_')) params[name.slice('param_'.length)] = value;
    }
    body = Buffer.alloc(0);
  }

  const engineSettings = new Map([...settings].filter(([k]) => !HTTP_SETTINGS.has(k)));
  const base = { params, settings: engineSettings, database, format };
  let statement: Statement | undefined;
  const hasParams = Object.keys(params).length > 0;
  if (urlQuery && body.length > 0) {
    statement =
      /^\s*INSERT\b/i.test(urlQuery) && !hasParams
        ? { ...base, sql: urlQuery, data: body }
        : { ...base, sql: `${urlQuery}\n${body.toString('utf8')}` };
  } else if (urlQuery) {
    // An INSERT whose rows were to come in the body, and none did: nothing to insert, as on a server.
    statement = insertWithoutRows(urlQuery.trim()) ? undefined : { ...base, sql: urlQuery };
  } else if (body.length > 0) {
    statement = { ...base, sql: body.toString('utf8') };
  } else {
    throw new ServerError(62, 'SYNTAX_ERROR', 'Empty query');
  }
  return { statement, queryId, format: (statement && trailingFormat(statement.sql)) ?? format, settings };
}

const EMPTY_ANSWER: Answer = {
  bytes: new Uint8Array(0),
  summary: {
    read_rows: '0',
    read_bytes: '0',
    written_rows: '0',
    written_bytes: '0',
    total_rows_to_read: '0',
    result_rows: '0',
    result_bytes: '0',
    elapsed_ns: '0',
  },
};

/** The ClickHouse front: an HTTP server (not yet listening) over `engine`. */
export function createFront(options: FrontOptions): Server {
  const { engine } = options;
  const displayName = 'clickhouse-front';

  const sendError = (res: ServerResponse, err: unknown, queryId: string | undefined): void => {
    const e =
      err instanceof ServerError
        ? err
        : new ServerError(1001, 'STD_EXCEPTION', err instanceof Error ? err.message : String(err));
    let text = e.text ?? `Code: ${e.code}. DB::Exception: ${e.message}. (${e.codeName})`;
    if (!/\(version [^)]*\)\s*$/.test(text)) text += ` (version ${engine.version})`;
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.writeHead(httpStatus(e.codeName), {
      'Content-Type': 'text/plain; charset=UTF-8',
      'X-ClickHouse-Server-Display-Name': displayName,
      'X-ClickHouse-Exception-Code': String(e.code),
      ...(queryId ? { 'X-ClickHouse-Query-Id': queryId } : {}),
    });
    res.end(`${text}\n`);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://front');
    const path = url.pathname;
    if (
      path === '/ping' ||
      path === '/replicas_status' ||
      (path === '/' && req.method !== 'POST' && !url.searchParams.has('query'))
    ) {
      req.resume();
      res.writeHead(200, { 'Content-Type': 'text/html; charset=UTF-8' });
      res.end('Ok.\n');
      return;
    }
    if (path !== '/') {
      req.resume();
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=UTF-8' });
      res.end(`There is no handle ${path}\n\nUse / or /ping for health checks.\n`);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'POST') {
      req.resume();
      throw new ServerError(1, 'UNSUPPORTED_METHOD', `Method ${req.method} is not supported`);
    }
    authenticate(req, url, options.password);
    const request = await readRequest(req, url);
    let queryId: string | undefined = request.queryId;
    try {
      const answer = request.statement ? await engine.run(request.statement) : EMPTY_ANSWER;
      const encoding = responseEncoding(req, request.settings);
      const level = Number(request.settings.get('http_zlib_compression_level') ?? 3);
      const body = encoding ? await compress(answer.bytes, encoding, level) : answer.bytes;
      res.writeHead(200, {
        'Content-Type': contentType(request.format),
        'X-ClickHouse-Server-Display-Name': displayName,
        'X-ClickHouse-Query-Id': request.queryId,
        'X-ClickHouse-Format': request.format,
        'X-ClickHouse-Timezone': engine.timezone,
        'X-ClickHouse-Summary': JSON.stringify(answer.summary),
        'Content-Length': String(body.byteLength),
        ...(encoding ? { 'Content-Encoding': encoding } : {}),
      });
      queryId = undefined;
      res.end(body);
    } catch (err) {
      sendError(res, err, queryId);
    }
  };

  // A server reads request lines of up to 1 MiB (`http_max_uri_size`); Node's own limit is 16 KiB.
  const server = createServer({ maxHeaderSize: 1024 * 1024 }, (req, res) => {
    handle(req, res).catch((err: unknown) => {
      req.resume();
      sendError(res, err, undefined);
    });
  });
  // ClickHouse's keep_alive_timeout (10 s); the client keeps idle sockets for less (2.5 s by default).
  server.keepAliveTimeout = 10_000;
  return server;
}
