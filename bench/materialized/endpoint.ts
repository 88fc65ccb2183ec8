/**
 * The benchmark's endpoint and how the scenarios talk to it: one SQL endpoint with an equality variable
 * (`event`) and a range variable (`since`), created materialized, and the variable values its runs take.
 */

export const KEY = 'phx_bench_materialized_00000000000000000000000';
export const NAME = 'browsers';
export const QUERY = `SELECT properties.$browser AS browser, count() AS n FROM events
  WHERE event = {variables.event} AND timestamp >= {variables.since}
  GROUP BY browser ORDER BY browser`;
export const DECLARED = { event: { type: 'string' }, since: { type: 'date' } } as const;

export interface Variables {
  readonly event: string;
  readonly since: string;
}

/** The generated events' names (bench/query/dataset.ts), and one no event has: its answer is empty. */
const EVENTS = ['$pageview', '$autocapture', 'signed up', '$pageleave', 'order completed', '$identify'];
const ABSENT = 'never happened';

/**
 * The values the timed runs take in turn: every event (and the absent one) × days spread over the data's 90
 * days from 2026-01-01, in a fixed shuffled order so that consecutive runs differ in both variables. A day
 * is a bucket's start (the default `day` bucket), so each materialized answer is exactly the direct one.
 */
export function variableValues(): Variables[] {
  const days = Array.from({ length: 12 }, (_, i) => day(i * 8));
  const all = [...EVENTS, ABSENT].flatMap((event) => days.map((since) => ({ event, since })));
  // A fixed permutation (a step coprime to the length), not Math.random: every run sends the same sequence.
  const step = 31;
  return all.map((_, i) => all[(i * step) % all.length]!);
}

/** The values whose answers are compared before timing: a whole range, a part, the last day, an absent event. */
export const CHECKED: readonly Variables[] = [
  { event: '$pageview', since: day(0) },
  { event: 'signed up', since: day(45) },
  { event: 'order completed', since: day(89) },
  { event: '$identify', since: day(100) },
  { event: ABSENT, since: day(10) },
];

/** The run that reads the most: the commonest event over the whole data (the refresh reads all of it). */
export const WIDEST: Variables = { event: '$pageview', since: day(0) };

function day(offset: number): string {
  return new Date(Date.UTC(2026, 0, 1 + offset)).toISOString().slice(0, 10);
}

export type Refresh = 'direct' | 'force' | 'cache';

/** A run's request body, as the callers send it. */
export function runBody(variables: Variables, refresh: Refresh): string {
  return JSON.stringify({ variables, refresh });
}

/** The parts of a run's answer the scenarios read. */
export interface RunAnswer {
  readonly results: unknown[][];
  readonly columns: string[];
  readonly types: string[];
  readonly is_cached: boolean;
  readonly endpoint_materialized: boolean;
}

/** The endpoint's state as GET shows it (the part read here). */
export interface EndpointState {
  readonly materialization: {
    readonly status: string;
    readonly last_materialized_at: string | null;
    readonly rows: number | null;
    readonly bytes: number | null;
    readonly error: string | null;
  };
}

/** Weir's HTTP API as the scenarios use it (setup and checks; timed load goes through load.ts). */
export class BenchClient {
  readonly base: string;
  readonly url: string;

  constructor(url: string) {
    this.url = url;
    this.base = `${url}/api/projects/1/endpoints`;
  }

  get runUrl(): string {
    return `${this.base}/${NAME}/run`;
  }

  async create(): Promise<EndpointState> {
    return this.#json('POST', `${this.base}/`, 201, {
      name: NAME,
      query: { kind: 'HogQLQuery', query: QUERY },
      variables: DECLARED,
      is_materialized: true,
      cache_age_seconds: 3600,
    });
  }

  state(): Promise<EndpointState> {
    return this.#json('GET', `${this.base}/${NAME}/`, 200);
  }

  /** Asks for a refresh now (202; it runs in the background). */
  materialize(): Promise<EndpointState> {
    return this.#json('POST', `${this.base}/${NAME}/materialize`, 202);
  }

  run(variables: Variables, refresh: Refresh): Promise<RunAnswer> {
    return this.#json('POST', this.runUrl, 200, JSON.parse(runBody(variables, refresh)) as object);
  }

  async metrics(): Promise<string> {
    const res = await fetch(`${this.url}/metrics`);
    if (res.status !== 200) throw new Error(`GET /metrics: ${res.status}`);
    return res.text();
  }

  /**
   * Polls the endpoint until a refresh has completed whose result is not `previous` (its
   * `last_materialized_at`), every `everyMs`; throws on a failed refresh or after `timeoutMs`.
   */
  async completed(previous: string | null, timeoutMs: number, everyMs = 10): Promise<EndpointState> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const state = await this.state();
      const m = state.materialization;
      if (m.status === 'failed') throw new Error(`refresh failed: ${m.error}`);
      if (m.status === 'completed' && m.last_materialized_at !== previous) return state;
      if (performance.now() > deadline)
        throw new Error(`no completed refresh after ${timeoutMs} ms: ${JSON.stringify(m)}`);
      await new Promise((r) => setTimeout(r, everyMs));
    }
  }

  async #json<T>(method: string, url: string, expected: number, body?: object): Promise<T> {
    const res = await fetch(url, {
      method,
      headers: { authorization: `Bearer ${KEY}` },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (res.status !== expected) throw new Error(`${method} ${url}: ${res.status} ${text}`);
    return JSON.parse(text) as T;
  }
}
