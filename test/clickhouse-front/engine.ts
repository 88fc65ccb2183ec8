/**
 * The chDB side of the ClickHouse front (test-only, see README.md): one chDB Session on a data directory, run
 * one statement at a time in arrival order, with what a ClickHouse server gives each HTTP request of its own —
 * its settings, its current database, its `{name:Type}` parameters — and nothing left over for the next one.
 *
 * chDB's session is one long-lived connection: a `SET` or `USE` stays on it. So the engine keeps what it has
 * set on the session and, before each statement, sets what that request asks and resets (`SET x = DEFAULT`)
 * what it does not. Parameters are bound by the engine itself (chDB's `chdb_query_with_params`), with the
 * values exactly as the HTTP request carried them (`param_<name>`: the value's text in TabSeparated escaping,
 * which is what a server reads). chdb-node's own `queryBindAsync` formats JS values into that text and would
 * escape the text once more, so the front calls chdb-node's native binding, the one its Session uses.
 */
import { createRequire } from 'node:module';
import { Session } from 'chdb';

/** An error as a ClickHouse server reports it: its code, the code's name, its message (without the name). */
export class ServerError extends Error {
  override name = 'ServerError';
  readonly code: number;
  readonly codeName: string;
  /** The whole text the engine gave, `Code: <n>. DB::Exception: …. (<NAME>)`, when it came from the engine. */
  readonly text: string | undefined;

  constructor(code: number, codeName: string, message: string, text?: string) {
    super(message);
    this.code = code;
    this.codeName = codeName;
    this.text = text;
  }
}

/** ClickHouse's `X-ClickHouse-Summary`: every value a decimal string. */
export interface Summary {
  readonly read_rows: string;
  readonly read_bytes: string;
  readonly written_rows: string;
  readonly written_bytes: string;
  readonly total_rows_to_read: string;
  readonly result_rows: string;
  readonly result_bytes: string;
  readonly elapsed_ns: string;
}

export interface Answer {
  readonly bytes: Uint8Array;
  readonly summary: Summary;
}

/** One request's statement and what it runs with. */
export interface Statement {
  /** The SQL; with `data`, the INSERT the data follows (as the `query` URL parameter of an insert). */
  readonly sql: string;
  /** The rows of an INSERT, in the format the INSERT names, handed to the engine as bytes. */
  readonly data?: Buffer;
  /** `{name:Type}` values, as sent: `param_<name>` without its prefix. */
  readonly params: Readonly<Record<string, string>>;
  /** Settings of this request (URL parameters that are settings), values as sent. */
  readonly settings: ReadonlyMap<string, string>;
  /** The current database of the statement. */
  readonly database: string;
  /** The output format when the SQL names none (`default_format`; TabSeparated by default). */
  readonly format: string;
}

interface NativeResult {
  readonly bytes: Uint8Array;
  readonly elapsed: number;
  readonly rowsRead: number;
  readonly bytesRead: number;
}

interface NativeInsertResult {
  readonly elapsed: number;
  readonly rowsWritten: number;
  readonly bytesWritten: number;
}

/** The calls of chdb-node's native binding the front uses (the ones its Session makes, without the JS layer). */
interface ChdbNative {
  QueryAsyncConnection(
    connection: unknown,
    sql: string,
    format: string,
    params?: Record<string, string>,
  ): Promise<NativeResult>;
  InsertRawAsyncConnection(
    connection: unknown,
    prefix: string,
    data: Buffer,
    countLines: boolean,
  ): Promise<NativeInsertResult>;
}

/**
 * chdb-node's native binding, through chdb-node's own loader (so the same, already loaded, instance): a relative
 * path inside the package, which its `exports` map does not list.
 */
function loadNative(): ChdbNative {
  const requireHere = createRequire(import.meta.url);
  const chdbMain = requireHere.resolve('chdb');
  const { loadNative } = createRequire(chdbMain)('./dist/loader.js') as { loadNative: () => ChdbNative };
  return loadNative();
}

/** A setting's name as the front lets it reach a `SET` (ClickHouse's own names are all of this shape). */
const SETTING_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** On the session: a value the front cannot know (a user's own `SET` ran), so it is reset before the next. */
const UNKNOWN = '\u0000';

/** A ClickHouse string literal. */
function literal(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** An identifier in backquotes. */
function quoteIdentifier(name: string): string {
  return `\`${name.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``;
}

/** The SQL without leading blanks and comments. */
function head(sql: string): string {
  return sql.replace(/^(?:\s+|--[^\n]*(?:\n|$)|#[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/)*/, '');
}

/** The setting names of a `SET a = 1, b = 'x'` (roughly: what precedes each `=` at the top level). */
function namesSet(sql: string): string[] {
  const body = head(sql).replace(/^SET\s+/i, '');
  const names: string[] = [];
  let depth = 0;
  let quote = '';
  let start = 0;
  const take = (end: number): void => {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=/.exec(body.slice(start, end));
    if (m) names.push(m[1]!);
  };
  for (let i = 0; i < body.length; i++) {
    const ch = body[i]!;
    if (quote) {
      if (ch === '\\') i++;
      else if (ch === quote) quote = '';
    } else if (ch === "'" || ch === '"' || ch === '`') quote = ch;
    else if (ch === '(' || ch === '[' || ch === '{') depth++;
    else if (ch === ')' || ch === ']' || ch === '}') depth--;
    else if (ch === ',' && depth === 0) {
      take(i);
      start = i + 1;
    }
  }
  take(body.length);
  return names;
}

/** The engine's error as a ServerError: code and name read from chDB's `Code: <n>. DB::Exception: … (<NAME>)`. */
export function engineError(err: unknown): ServerError {
  if (err instanceof ServerError) return err;
  const text = err instanceof Error ? err.message : String(err);
  const code = /^Code: (\d+)\./.exec(text);
  const name = /\(([A-Z][A-Z0-9_]*[A-Z0-9])\)(?:\s*\(version [^)]*(?:\([^)]*\))?[^)]*\))?\s*$/.exec(text);
  if (!code) return new ServerError(1001, 'STD_EXCEPTION', text);
  const message = text
    .replace(/^Code: \d+\.\s*(?:DB::Exception:\s*)?/, '')
    .replace(/\s*\([A-Z][A-Z0-9_]*\)(?:\s*\(version [^)]*(?:\([^)]*\))?[^)]*\))?\s*$/, '');
  return new ServerError(Number(code[1]), name?.[1] ?? 'UNKNOWN_EXCEPTION', message, text.trim());
}

const EMPTY_SUMMARY: Summary = {
  read_rows: '0',
  read_bytes: '0',
  written_rows: '0',
  written_bytes: '0',
  total_rows_to_read: '0',
  result_rows: '0',
  result_bytes: '0',
  elapsed_ns: '0',
};

function nanoseconds(seconds: number): string {
  return String(Math.max(0, Math.round(seconds * 1e9)));
}

export class Engine {
  readonly #session: Session;
  readonly #native: ChdbNative;
  /** The engine's version (`SELECT version()`) and time zone, for the answers' headers and error texts. */
  readonly version: string;
  readonly timezone: string;
  #tail: Promise<unknown> = Promise.resolve();
  #closed = false;
  /** What the front has set on the session, beyond the defaults. */
  #settings = new Map<string, string>();
  /** The session's current database; undefined when a user's `USE` may have changed it. */
  #database: string | undefined = 'default';

  private constructor(session: Session, native: ChdbNative, version: string, timezone: string) {
    this.#session = session;
    this.#native = native;
    this.version = version;
    this.timezone = timezone;
  }

  static async open(dataDir: string): Promise<Engine> {
    const native = loadNative();
    const session = new Session(dataDir);
    try {
      const r = await native.QueryAsyncConnection(
        session.connection,
        'SELECT version(), timezone()',
        'TabSeparated',
      );
      const [version = '', timezone = 'UTC'] = Buffer.from(r.bytes).toString('utf8').trim().split('\t');
      return new Engine(session, native, version, timezone);
    } catch (err) {
      session.close();
      throw err;
    }
  }

  /** Runs `statement` once every statement given before it has run. */
  run(statement: Statement): Promise<Answer> {
    if (this.#closed) return Promise.reject(new ServerError(210, 'NETWORK_ERROR', 'The front is closing'));
    const turn = this.#tail.then(() => this.#turn(statement));
    this.#tail = turn.then(
      () => undefined,
      () => undefined,
    );
    return turn;
  }

  /** Lets the statements already given run, then closes the session. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#tail;
    this.#session.close();
  }

  async #turn(st: Statement): Promise<Answer> {
    try {
      await this.#applySettings(st.settings);
      await this.#use(st.database);
      const answer = await this.#statement(st);
      this.#afterUserStatement(st.sql);
      return answer;
    } catch (err) {
      this.#afterUserStatement(st.sql);
      await this.#clear();
      throw engineError(err);
    }
  }

  async #statement(st: Statement): Promise<Answer> {
    const connection = this.#session.connection;
    if (st.data) {
      const r = await this.#native.InsertRawAsyncConnection(connection, st.sql, st.data, false);
      return {
        bytes: new Uint8Array(0),
        summary: {
          ...EMPTY_SUMMARY,
          written_rows: String(r.rowsWritten),
          written_bytes: String(r.bytesWritten),
          elapsed_ns: nanoseconds(r.elapsed),
        },
      };
    }
    const params = Object.keys(st.params).length > 0 ? { ...st.params } : undefined;
    const r = params
      ? await this.#native.QueryAsyncConnection(connection, st.sql, st.format, params)
      : await this.#native.QueryAsyncConnection(connection, st.sql, st.format);
    return {
      bytes: r.bytes,
      summary: {
        ...EMPTY_SUMMARY,
        read_rows: String(r.rowsRead),
        read_bytes: String(r.bytesRead),
        result_rows: String(r.rowsRead),
        result_bytes: String(r.bytes.byteLength),
        elapsed_ns: nanoseconds(r.elapsed),
      },
    };
  }

  /** A statement of the front's own on the session (SET, USE), its answer ignored. */
  async #own(sql: string): Promise<void> {
    await this.#native.QueryAsyncConnection(this.#session.connection, sql, 'TabSeparated');
  }

  /** Sets what `wanted` asks and resets what the session carries that `wanted` does not. */
  async #applySettings(wanted: ReadonlyMap<string, string>): Promise<void> {
    const changes: string[] = [];
    for (const [name, value] of wanted) {
      if (!SETTING_NAME.test(name))
        throw new ServerError(115, 'UNKNOWN_SETTING', `Unknown setting '${name}'`);
      if (this.#settings.get(name) !== value) changes.push(`${name} = ${literal(value)}`);
    }
    for (const name of this.#settings.keys()) if (!wanted.has(name)) changes.push(`${name} = DEFAULT`);
    if (changes.length === 0) return;
    try {
      await this.#own(`SET ${changes.join(', ')}`);
    } catch (err) {
      // Part of it may have been applied: back to the defaults, every name the session may carry.
      await this.#resetSettings([...new Set([...this.#settings.keys(), ...wanted.keys()])]);
      throw err;
    }
    this.#settings = new Map(wanted);
  }

  /** Resets `names` to their defaults; a name the engine does not know is passed over. */
  async #resetSettings(names: readonly string[]): Promise<void> {
    const valid = names.filter((n) => SETTING_NAME.test(n));
    this.#settings = new Map();
    if (valid.length === 0) return;
    try {
      await this.#own(`SET ${valid.map((n) => `${n} = DEFAULT`).join(', ')}`);
    } catch {
      for (const n of valid) await this.#own(`SET ${n} = DEFAULT`).catch(() => undefined);
    }
  }

  async #use(database: string): Promise<void> {
    if (this.#database === database) return;
    this.#database = undefined;
    await this.#own(`USE ${quoteIdentifier(database)}`);
    this.#database = database;
  }

  /** A user's own `SET` or `USE` lasts for its request only, as on a server: the next request undoes it. */
  #afterUserStatement(sql: string): void {
    const start = head(sql);
    if (/^USE\b/i.test(start)) this.#database = undefined;
    else if (/^SET\b/i.test(start)) for (const name of namesSet(sql)) this.#settings.set(name, UNKNOWN);
  }

  /**
   * After a failure: chDB leaves what a failed statement had written (a header, rows) on the connection, and
   * the next statement's answer would begin with it. A statement that succeeds takes it.
   */
  async #clear(): Promise<void> {
    try {
      await this.#own('SELECT 1 FORMAT Null');
    } catch {
      // Nothing more to do: the next statement's answer may carry the leftover.
    }
  }
}
