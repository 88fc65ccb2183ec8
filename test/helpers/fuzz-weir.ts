/**
 * A real Weir for the capture fuzz (issue 39, item 5): `weir start` in its own process (so that it can be
 * stopped with SIGTERM and started again on the same data), on the embedded bus or over JetStream with a real
 * nats-server, and the checks one fuzz case and a whole run are held to: the answer the model predicts, never
 * a 5xx but a 503 with Retry-After, every event answered 200 that the contract does not drop stored exactly
 * once by its uuid with its strings well formed (or set aside in the quarantine with its reason), the query
 * API answering, and nothing else stored.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { startNatsServer, type NatsServer } from './nats-server.ts';
import {
  describeCase,
  encodeCase,
  expectCase,
  illFormed,
  mismatch,
  type Exp,
  type FuzzCase,
  type Outcome,
  type StoredEvent,
} from './fuzz-capture.ts';
import { PERSONAL_API_KEY, PROJECT_API_KEY, spawnWeir, tempDir, waitFor, type SpawnedWeir } from './weir.ts';

export type Backend = 'embedded' | 'jetstream';

export interface FuzzWeirOptions {
  readonly backend: Backend;
  /** `WEIR_CAPTURE_THREADS`: 0 decodes on the main thread, 1 in a capture thread (another code path). */
  readonly captureThreads: number;
  /** How long an event answered 200 may take to be queryable. */
  readonly storeDeadlineMs?: number;
  /**
   * Whether an event of a case found set aside in the quarantine (with its reason) passes the case, as the
   * contract allows; else it fails it, for fast-check to shrink: capture's edge makes every string well
   * formed, so a row the engine refuses is a bug.
   */
  readonly allowQuarantine?: boolean;
  /**
   * How long after a case's answer its canary is sent. Ingest writes some rows on a timer (property
   * definitions 500 ms after they are seen): a row of those that the engine refuses stops the store only
   * then, and with no wait it is the next case that fails. Worth its cost where failures are shrunk.
   */
  readonly settleMs?: number;
}

/** One event that must be stored, and the case it came from (for messages). */
interface Expected {
  readonly event: StoredEvent;
  readonly from: string;
}

export interface QuarantineEntry {
  readonly id: string;
  readonly table: string;
  readonly event_uuid: string;
  readonly code: number;
  readonly error: string;
  readonly status: string;
}

export interface HttpAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

const READY_URL = /"url":"(http:\/\/[^"]+)"[^\n]*"msg":"weir is ready"/;

export class FuzzWeir {
  readonly options: FuzzWeirOptions;
  readonly dataDir: string;
  readonly nats: NatsServer | undefined;
  #proc: SpawnedWeir | undefined;
  #url = '';
  /** Every event that must be stored in this Weir's data, by uuid. */
  readonly expected = new Map<string, Expected>();
  /** Uuids found set aside, with the entry. */
  readonly quarantined = new Map<string, QuarantineEntry>();
  /** Whether a failed case may have left the store broken: the next case then needs a fresh Weir. */
  tainted = false;
  /** Whether the quarantine listing answered anything but 200 (it is being built beside this suite). */
  quarantineApi: number | undefined;
  /** The case sent before the current one, for messages: what breaks the store may show a case late. */
  previous: FuzzCase | undefined;
  /** How often each status came back, for the report. */
  readonly statuses = new Map<number, number>();

  private constructor(options: FuzzWeirOptions, dataDir: string, nats: NatsServer | undefined) {
    this.options = options;
    this.dataDir = dataDir;
    this.nats = nats;
  }

  static async start(options: FuzzWeirOptions): Promise<FuzzWeir> {
    const nats = options.backend === 'jetstream' ? await startNatsServer() : undefined;
    const w = new FuzzWeir(options, tempDir('weir-fuzz-'), nats);
    try {
      await w.spawn();
    } catch (err) {
      await w.close();
      throw err;
    }
    return w;
  }

  get url(): string {
    return this.#url;
  }

  /** The process's log so far (its last lines), for failure messages. */
  logTail(lines = 25): string {
    // Engine errors quote the whole row: each line is cut, the message must stay readable.
    return (this.#proc?.output() ?? '')
      .trimEnd()
      .split('\n')
      .slice(-lines)
      .map((l) => (l.length > 600 ? `${l.slice(0, 600)}…` : l))
      .join('\n');
  }

  /** Starts `weir start` on this data directory (and NATS), and waits for the URL it serves capture on. */
  async spawn(): Promise<void> {
    const env: Record<string, string> = {
      WEIR_CAPTURE_THREADS: String(this.options.captureThreads),
      WEIR_LOG_LEVEL: 'info',
    };
    if (this.nats) {
      env['WEIR_NATS_URL'] = this.nats.url;
      // A batch delivered before a SIGTERM and not acknowledged comes back after this long.
      env['WEIR_BUS_ACK_WAIT_MS'] = '3000';
    }
    const proc = await spawnWeir(this.dataDir, env);
    this.#proc = proc;
    // With capture threads, the first URL logged is the API's loopback one; the public one comes with "ready".
    this.#url = await waitFor(
      () => {
        if (proc.child.exitCode !== null)
          throw new Error(`weir exited (${proc.child.exitCode}):\n${this.logTail()}`);
        return Promise.resolve(READY_URL.exec(proc.output())?.[1]);
      },
      60_000,
      'weir to be ready',
    );
  }

  /** SIGTERM, and the exit code (or `killed` when it did not exit within the deadline, then SIGKILL). */
  async stop(deadlineMs = 30_000): Promise<number | null | 'killed'> {
    const proc = this.#proc;
    if (!proc || proc.child.exitCode !== null) return proc?.child.exitCode ?? null;
    proc.child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([
      proc.exited,
      new Promise<'killed'>((resolve) => (timer = setTimeout(() => resolve('killed'), deadlineMs))),
    ]);
    clearTimeout(timer);
    if (code === 'killed') {
      proc.child.kill('SIGKILL');
      await proc.exited;
    }
    return code;
  }

  /** Stops everything this Weir started and removes its data. */
  async close(): Promise<void> {
    const proc = this.#proc;
    if (proc && proc.child.exitCode === null) {
      proc.child.kill('SIGKILL');
      await proc.exited;
    }
    await this.nats?.close();
    rmSync(this.dataDir, { recursive: true, force: true });
  }

  async query(sql: string): Promise<HttpAnswer & { json: { results?: unknown[][] } | undefined }> {
    const res = await fetch(`${this.#url}/api/projects/1/query/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${PERSONAL_API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: { kind: 'HogQLQuery', query: sql } }),
    });
    const text = await res.text();
    let json: { results?: unknown[][] } | undefined;
    try {
      json = JSON.parse(text) as { results?: unknown[][] };
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json };
  }

  /** The quarantine listing (`GET P/quarantine/`), or undefined when it does not answer 200. */
  async quarantine(): Promise<QuarantineEntry[] | undefined> {
    const res = await fetch(`${this.#url}/api/projects/1/quarantine/`, {
      headers: { authorization: `Bearer ${PERSONAL_API_KEY}` },
    });
    const text = await res.text();
    if (res.status !== 200) {
      this.quarantineApi = res.status;
      return undefined;
    }
    const entries = (JSON.parse(text) as { results: QuarantineEntry[] }).results;
    for (const e of entries) if (typeof e.event_uuid === 'string') this.quarantined.set(e.event_uuid, e);
    return entries;
  }

  count(status: number): void {
    this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1);
  }
}

/** Sends a request; a 503 with Retry-After is retried as a client would (a few times), anything else returned. */
export async function send(url: string, c: FuzzCase, problems: string[]): Promise<HttpAnswer | undefined> {
  const req = encodeCase(c);
  for (let attempt = 0; ; attempt++) {
    let res: Response;
    try {
      res = await fetch(`${url}${req.path}`, { method: req.method, headers: req.headers, body: req.body });
    } catch (err) {
      problems.push(`the request failed: ${String((err as Error).cause ?? err)}`);
      return undefined;
    }
    const text = await res.text();
    const retryAfter = res.headers.get('retry-after');
    if (res.status === 503 && retryAfter !== null && attempt < 5) {
      await new Promise((r) => setTimeout(r, Math.min(2000, Number(retryAfter) * 1000 || 500)));
      continue;
    }
    return { status: res.status, headers: res.headers, text };
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Whether the answer is the model's; problems say how it is not. */
function checkAnswer(c: FuzzCase, outcome: Outcome, res: HttpAnswer, problems: string[]): boolean {
  const body = parseJson(res.text) as Record<string, unknown> | undefined;
  if (res.status >= 500) {
    const why = res.status === 503 ? ' (a 503 without Retry-After, or still 503 after 5 tries)' : '';
    problems.push(`answered ${res.status}${why}: ${res.text.slice(0, 300)}`);
    return false;
  }
  if (
    c.origin !== undefined &&
    c.method === 'POST' &&
    res.headers.get('access-control-allow-origin') !== c.origin
  )
    problems.push(
      `Access-Control-Allow-Origin is ${res.headers.get('access-control-allow-origin')}, not the Origin`,
    );
  switch (outcome.kind) {
    case 'answer':
      if (res.status !== outcome.status)
        problems.push(`expected ${outcome.status}, got ${res.status}: ${res.text.slice(0, 300)}`);
      else if (res.status === 405 && !/POST/.test(res.headers.get('allow') ?? ''))
        problems.push(`405 without Allow: POST, OPTIONS (Allow: ${res.headers.get('allow')})`);
      return false;
    case 'refused': {
      const code = body?.['code'];
      if (res.status !== outcome.status || typeof code !== 'string' || !outcome.codes.includes(code)) {
        problems.push(
          `expected ${outcome.status} ${outcome.codes.join(' or ')}, got ${res.status}: ${res.text.slice(0, 300)}`,
        );
      } else if (
        !/^application\/json/.test(res.headers.get('content-type') ?? '') ||
        typeof body?.['detail'] !== 'string'
      ) {
        problems.push(`the refusal is not a SPEC §1 error body: ${res.text.slice(0, 300)}`);
      }
      return false;
    }
    case 'accepted': {
      if (outcome.mayRefuse && res.status === 400 && body?.['code'] === 'invalid_payload') return false;
      if (res.status !== outcome.status) {
        problems.push(`expected ${outcome.status}, got ${res.status}: ${res.text.slice(0, 300)}`);
        return false;
      }
      if (res.status === 200 && JSON.stringify(body) !== '{"status":"Ok"}')
        problems.push(`200 with body ${res.text.slice(0, 200)}`);
      if (res.status === 204 && res.text !== '') problems.push(`204 with a body: ${res.text.slice(0, 200)}`);
      return true;
    }
    case 'ambiguous':
      return false;
  }
}

const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A plain event sent after a case: if the case broke the store, nothing behind it is stored either. */
export function canary(): { c: FuzzCase; event: StoredEvent } {
  const uuid = randomUUID();
  return {
    c: {
      method: 'POST',
      route: '/i/v0/e/',
      query: '',
      encoding: 'json',
      text: JSON.stringify({
        api_key: PROJECT_API_KEY,
        event: 'fuzz canary',
        distinct_id: 'fuzz-canary',
        uuid,
      }),
      note: 'canary',
    },
    event: {
      uuid,
      index: 0,
      event: { t: 'eq', v: 'fuzz canary' },
      distinctId: { t: 'eq', v: 'fuzz-canary' },
      properties: { t: 'obj', fields: new Map(), partial: true },
    },
  };
}

/**
 * Polls until every event of `events` is stored (and checks each: once, its name, distinct id and
 * properties as the model says, every string well formed) or set aside in the quarantine; a query answered
 * anything but 200 (or 503 with Retry-After, for a while) is a problem at once.
 */
export async function awaitStored(
  w: FuzzWeir,
  events: readonly StoredEvent[],
  problems: string[],
): Promise<void> {
  const deadline = Date.now() + (w.options.storeDeadlineMs ?? 20_000);
  const pending = new Map(events.map((e) => [e.uuid, e]));
  let lastQuarantine = 0;
  while (pending.size > 0) {
    const uuids = [...pending.keys()].slice(0, 200);
    const res = await w.query(
      `SELECT toString(uuid) AS u, count() AS n, any(event) AS e, any(distinct_id) AS d, any(properties) AS p
       FROM events WHERE uuid IN (${uuids.map((u) => `'${u}'`).join(', ')}) GROUP BY u`,
    );
    if (res.status !== 200 && !(res.status === 503 && res.headers.get('retry-after') !== null)) {
      problems.push(`the query API answered ${res.status}: ${res.text.slice(0, 300)}`);
      return;
    }
    for (const row of res.json?.results ?? []) {
      const [u, n, name, distinctId, props] = row as [string, number, string, string, string];
      const e = pending.get(u);
      if (!e) continue;
      pending.delete(u);
      const label = `event ${e.index} (${u})`;
      if (Number(n) !== 1) problems.push(`${label} is stored ${n} times`);
      let properties: unknown;
      try {
        properties = JSON.parse(props);
      } catch {
        problems.push(`${label}: properties are not JSON: ${props.slice(0, 200)}`);
        continue;
      }
      const bad =
        illFormed(name, 'event') ??
        illFormed(distinctId, 'distinct_id') ??
        illFormed(properties, 'properties');
      if (bad !== undefined) problems.push(`${label}: a string is not well formed: ${bad}`);
      const m =
        mismatch(e.event, name, 'event') ??
        mismatch(e.distinctId, distinctId, 'distinct_id') ??
        mismatch(e.properties, properties, 'properties');
      if (m !== undefined) problems.push(`${label}: ${m}`);
    }
    if (pending.size === 0) return;
    if (Date.now() - lastQuarantine > 1000) {
      lastQuarantine = Date.now();
      await w.quarantine();
      for (const [u, e] of [...pending]) {
        const q = w.quarantined.get(u);
        if (q === undefined) continue;
        pending.delete(u);
        if (w.options.allowQuarantine !== true)
          problems.push(
            `event ${e.index} (${u}) was set aside: ${q.table}, code ${q.code}: ${q.error.slice(0, 300)}`,
          );
      }
      if (pending.size === 0) return;
    }
    if (Date.now() > deadline) {
      problems.push(
        `not stored after ${w.options.storeDeadlineMs ?? 20_000} ms: ${[...pending.values()].map((e) => `event ${e.index} (${e.uuid})`).join(', ')}`,
      );
      return;
    }
    await delay(25);
  }
}

export interface CaseResult {
  /** Why the model does not decide this case (then nothing was sent). */
  readonly skipped?: string;
  readonly problems: readonly string[];
  readonly status?: number;
}

const TEXT: Exp = { t: 'text' };
const SOME_OBJECT: Exp = { t: 'obj', fields: new Map(), partial: true };

/** Sends one case (and a canary after it) and checks everything the contract says of it. */
export async function checkCase(w: FuzzWeir, c: FuzzCase): Promise<CaseResult> {
  const outcome = expectCase(c);
  if (outcome.kind === 'ambiguous') return { skipped: outcome.why, problems: [] };
  const problems: string[] = [];
  const res = await send(w.url, c, problems);
  const answered = Date.now();
  if (!res) return { problems };
  w.count(res.status);
  const toStore: StoredEvent[] = [];
  const accepted = checkAnswer(c, outcome, res, problems) && outcome.kind === 'accepted';
  if (accepted && c.retry === true) {
    const again = await send(w.url, c, problems);
    if (again && again.status !== res.status)
      problems.push(`the same request again was answered ${again.status}: ${again.text.slice(0, 300)}`);
  }
  if (accepted && outcome.kind === 'accepted') {
    for (const e of outcome.stored) {
      // A uuid this Weir has stored before (fast-check shrinks uuids to the same few): the contract makes it
      // one event, one row, but does not say whose content that row keeps.
      if (w.expected.has(e.uuid)) {
        toStore.push({ ...e, event: TEXT, distinctId: TEXT, properties: SOME_OBJECT });
        continue;
      }
      w.expected.set(e.uuid, { event: e, from: c.note ?? '' });
      toStore.push(e);
    }
  }
  const settle = (w.options.settleMs ?? 0) - (Date.now() - answered);
  if (settle > 0) await delay(settle);
  const can = canary();
  const canRes = await send(w.url, can.c, problems);
  if (canRes && canRes.status === 200) {
    w.expected.set(can.event.uuid, { event: can.event, from: 'canary' });
    toStore.push(can.event);
  } else if (canRes) {
    problems.push(`the canary after the case was answered ${canRes.status}: ${canRes.text.slice(0, 200)}`);
  }
  await awaitStored(w, toStore, problems);
  if (problems.length === 0) w.previous = c;
  return { problems, status: res.status };
}

/** The message of a failed case: what went wrong, the request, and the end of Weir's log. */
export function failureMessage(w: FuzzWeir, c: FuzzCase, problems: readonly string[]): string {
  return [
    `${problems.length} problem(s) on ${w.options.backend}:`,
    ...problems.map((p) => `  - ${p}`),
    describeCase(c),
    w.previous === undefined
      ? ''
      : `the case before it on this Weir (passed):\n${describeCase(w.previous, 2000)}`,
    `weir's log (last lines):`,
    w.logTail(15),
  ].join('\n');
}

/**
 * After a run: every uuid expected is stored exactly once (or set aside), and nothing else is stored. Each
 * row set aside is listed too (`set aside: …`), for the caller to take as a failure or not.
 */
export async function checkAll(w: FuzzWeir): Promise<string[]> {
  const problems: string[] = [];
  const stored = new Map<string, number>();
  let last = '';
  for (;;) {
    const res = await w.query(
      `SELECT toString(uuid) AS u, count() AS n FROM events WHERE toString(uuid) > '${last}' GROUP BY u ORDER BY u LIMIT 10000`,
    );
    if (res.status !== 200) {
      problems.push(`the query API answered ${res.status}: ${res.text.slice(0, 300)}`);
      return problems;
    }
    const rows = (res.json?.results ?? []) as [string, number][];
    for (const [u, n] of rows) stored.set(u, Number(n));
    if (rows.length < 10000) break;
    last = rows[rows.length - 1]![0];
  }
  problems.push(...(await derivedWellFormed(w)));
  const entries = await w.quarantine();
  if (entries === undefined) problems.push(`the quarantine listing answered ${w.quarantineApi}, not 200`);
  const missing: string[] = [];
  for (const [u, e] of w.expected) {
    const n = stored.get(u) ?? 0;
    if (n === 0 && !w.quarantined.has(u)) missing.push(`${u} (${e.from})`);
    if (n > 1) problems.push(`${u} is stored ${n} times (${e.from})`);
  }
  if (missing.length > 0)
    problems.push(
      `${missing.length} event(s) answered 200 are not stored: ${missing.slice(0, 10).join(', ')}`,
    );
  const extra = [...stored.keys()].filter((u) => !w.expected.has(u));
  if (extra.length > 0)
    problems.push(`${extra.length} event(s) stored that should not be: ${extra.slice(0, 10).join(', ')}`);
  for (const e of entries ?? []) {
    if (!(e.code > 0) || typeof e.error !== 'string' || e.error === '')
      problems.push(`a row set aside without its reason: ${JSON.stringify(e).slice(0, 300)}`);
    problems.push(
      `set aside: ${e.table} ${e.event_uuid} (${e.status}) code ${e.code}: ${String(e.error).slice(0, 300)}`,
    );
  }
  return problems;
}

/**
 * What ingest made of the events is well formed too (SPEC §2 names `$set` and group properties): persons,
 * distinct ids, groups, ingestion warnings, and the property definitions' names.
 */
async function derivedWellFormed(w: FuzzWeir): Promise<string[]> {
  const problems: string[] = [];
  const tables: [string, string][] = [
    ['persons', 'SELECT properties FROM persons'],
    ['person_distinct_ids', 'SELECT distinct_id FROM person_distinct_ids'],
    ['groups', 'SELECT group_type, group_key, properties FROM groups'],
    ['ingestion_warnings', 'SELECT type, details FROM ingestion_warnings'],
  ];
  for (const [table, sql] of tables) {
    const res = await w.query(`${sql} LIMIT 20000`);
    if (res.status !== 200) {
      problems.push(`the query API answered ${res.status} reading ${table}: ${res.text.slice(0, 300)}`);
      continue;
    }
    for (const row of res.json?.results ?? []) {
      // Columns of JSON text (properties, details) are read as the values they hold.
      const values = row.map((v) => {
        if (typeof v !== 'string' || !/^[[{]/.test(v)) return v;
        try {
          return JSON.parse(v) as unknown;
        } catch {
          return v;
        }
      });
      const bad = illFormed(values, table);
      if (bad !== undefined) {
        problems.push(`a ${table} row is not well formed: ${bad}`);
        break;
      }
    }
  }
  const res = await fetch(`${w.url}/api/projects/1/property_definitions/?limit=1000`, {
    headers: { authorization: `Bearer ${PERSONAL_API_KEY}` },
  });
  const text = await res.text();
  if (res.status !== 200) {
    problems.push(`the property definitions answered ${res.status}: ${text.slice(0, 300)}`);
  } else {
    const names = (JSON.parse(text) as { results: { name: string }[] }).results.map((d) => d.name);
    const bad = illFormed(names, 'property_definitions');
    if (bad !== undefined) problems.push(`a property definition's name is not well formed: ${bad}`);
  }
  return problems;
}

/** SIGTERM, a restart on the same data (and NATS), ready within a deadline, and everything still there. */
export async function checkRestart(w: FuzzWeir): Promise<string[]> {
  const problems: string[] = [];
  const code = await w.stop();
  if (code !== 0)
    problems.push(
      `SIGTERM: ${code === 'killed' ? 'did not exit within 30 s' : `exited ${code}`}\n${w.logTail(10)}`,
    );
  try {
    await w.spawn();
  } catch (err) {
    problems.push(`the restart did not start: ${(err as Error).message.slice(0, 2000)}`);
    return problems;
  }
  try {
    await waitFor(
      async () => ((await fetch(`${w.url}/_ready`)).status === 200 ? true : undefined),
      60_000,
      '/_ready to answer 200 after the restart',
    );
  } catch (err) {
    problems.push(`${(err as Error).message}\n${w.logTail(10)}`);
    return problems;
  }
  // JetStream may still deliver what was published before the stop: wait for a canary sent now.
  const can = canary();
  const res = await send(w.url, can.c, problems);
  if (res?.status === 200) {
    w.expected.set(can.event.uuid, { event: can.event, from: 'canary after the restart' });
    await awaitStored(w, [can.event], problems);
  } else if (res) {
    problems.push(`an event after the restart was answered ${res.status}: ${res.text.slice(0, 200)}`);
  }
  problems.push(...(await checkAll(w)));
  return problems;
}
