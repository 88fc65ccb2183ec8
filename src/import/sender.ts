import type { ImportEvent } from './event-row.ts';

export interface SenderConfig {
  /** Capture's base URL; requests go to `<url>/batch/`. */
  readonly url: string;
  readonly apiKey: string;
  /** How long one batch may keep being refused for now (503, 429, 5xx, no connection) before the import stops. */
  readonly giveUpAfterMs: number;
}

/** A row the server refused (a 400 naming it), with the server's code and sentence. */
export interface ServerRefusal<E extends ImportEvent = ImportEvent> {
  readonly event: E;
  readonly code: string;
  readonly detail: string;
}

export interface SendOutcome<E extends ImportEvent = ImportEvent> {
  /** Events answered 200. */
  readonly stored: number;
  readonly refused: readonly ServerRefusal<E>[];
  /** True when the send was stopped (Ctrl-C) while waiting to retry: nothing after `stored` was answered. */
  readonly aborted: boolean;
}

/** A fault no retry mends (a wrong key, a URL that is not capture): the import stops, its checkpoint kept. */
export class ImportFatalError extends Error {}

interface ErrorBody {
  code?: string;
  detail?: string;
  attr?: string | null;
}

const BATCH_ATTR = /^batch\[(\d+)\]/;

/**
 * Sends batches to `/batch/` with `historical_migration: true` and no `sent_at` (so capture keeps each
 * event's timestamp as written rather than correcting it for clock skew). One bad event refuses a whole
 * request (SPEC §2), so a 400 is narrowed to its row: capture names the event (`attr: batch[i]`), which is
 * refused and the rest sent again; without a name the batch is halved until the bad row stands alone. Each
 * part is sent after the one before it, so the order of the file is kept. Busy answers (503, 429) wait for
 * `Retry-After`; faults of the moment (5xx, a dropped connection) back off exponentially.
 */
export class Sender {
  readonly #config: SenderConfig;
  readonly #endpoint: string;
  readonly #prefix: string;
  readonly #signal: AbortSignal;
  readonly #onWait: (what: string, ms: number) => void;

  constructor(
    config: SenderConfig,
    deps: { signal: AbortSignal; onWait: (what: string, ms: number) => void },
  ) {
    this.#config = config;
    this.#endpoint = `${config.url.replace(/\/+$/, '')}/batch/`;
    this.#prefix = `{"api_key":${JSON.stringify(config.apiKey)},"historical_migration":true,"batch":[`;
    this.#signal = deps.signal;
    this.#onWait = deps.onWait;
  }

  async send<E extends ImportEvent>(events: readonly E[]): Promise<SendOutcome<E>> {
    const refused: ServerRefusal<E>[] = [];
    let stored = 0;
    // Parts still to send, in file order; a part that must be narrowed is replaced by its pieces.
    const todo: (readonly E[])[] = [events];
    while (todo.length > 0) {
      const part = todo.shift()!;
      const answer = await this.#post(part);
      if (answer === 'aborted') return { stored, refused, aborted: true };
      if (answer.status === 200) {
        stored += part.length;
        continue;
      }
      const body = answer.body;
      const index = BATCH_ATTR.exec(body.attr ?? '')?.[1];
      const code = body.code ?? `http_${answer.status}`;
      const detail = body.detail ?? `HTTP ${answer.status}`;
      if (answer.status === 400 && index !== undefined && Number(index) < part.length) {
        const i = Number(index);
        refused.push({ event: part[i]!, code, detail });
        const rest = [...part.slice(0, i), ...part.slice(i + 1)];
        if (rest.length > 0) todo.unshift(rest);
      } else if (part.length === 1) {
        refused.push({ event: part[0]!, code, detail });
      } else {
        const half = part.length >> 1;
        todo.unshift(part.slice(0, half), part.slice(half));
      }
    }
    return { stored, refused, aborted: false };
  }

  /** One part, retried until it gets an answer that is about the events (200, 400, 413) or the time is up. */
  async #post(part: readonly ImportEvent[]): Promise<{ status: number; body: ErrorBody } | 'aborted'> {
    const body = `${this.#prefix}${part.map((e) => e.json).join(',')}]}`;
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      if (this.#signal.aborted) return 'aborted';
      let status: number;
      let text: string;
      let retryAfter: string | null = null;
      try {
        const res = await fetch(this.#endpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        });
        status = res.status;
        retryAfter = res.headers.get('retry-after');
        text = await res.text();
      } catch (err) {
        status = 0;
        text =
          (err as Error).cause instanceof Error
            ? ((err as Error).cause as Error).message
            : (err as Error).message;
      }
      if (status === 200 || status === 400 || status === 413) return { status, body: parseBody(text) };
      if (status === 401 || status === 403 || status === 404 || status === 405 || status === 415) {
        const b = parseBody(text);
        throw new ImportFatalError(
          `${this.#endpoint} answered ${status}${b.code ? ` ${b.code}` : ''}: ${b.detail ?? text.slice(0, 200)}`,
        );
      }
      const wait = waitFor(status, retryAfter, attempt);
      if (Date.now() + wait - started > this.#config.giveUpAfterMs) {
        throw new ImportFatalError(
          `${this.#endpoint} still refused after ${Math.round((Date.now() - started) / 1000)} s: ${status === 0 ? text : `HTTP ${status}`}`,
        );
      }
      this.#onWait(status === 0 ? `no answer (${text})` : `HTTP ${status}`, wait);
      if (!(await pause(wait, this.#signal))) return 'aborted';
    }
  }
}

function parseBody(text: string): ErrorBody {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null ? v : {};
  } catch {
    return {};
  }
}

/**
 * How long to wait before trying again: `Retry-After` when the server gives it (seconds or an HTTP date),
 * else exponential from 250 ms to 30 s with jitter, so many importers refused together do not return together.
 */
export function waitFor(status: number, retryAfter: string | null, attempt: number): number {
  if (retryAfter !== null && (status === 503 || status === 429)) {
    const secs = Number(retryAfter);
    if (Number.isFinite(secs) && secs >= 0) return Math.min(secs * 1000, 300_000);
    const at = Date.parse(retryAfter);
    if (Number.isFinite(at)) return Math.max(0, Math.min(at - Date.now(), 300_000));
  }
  const base = Math.min(250 * 2 ** attempt, 30_000);
  return Math.round(base / 2 + Math.random() * (base / 2));
}

/** Waits `ms`, or less when `signal` aborts; says whether the whole wait passed. */
function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Spaces batches so that no more than `perSecond` events go out a second, on average from the first. */
export class RateLimit {
  readonly #perSecond: number;
  #next = 0;

  constructor(perSecond: number) {
    this.#perSecond = perSecond;
  }

  async take(events: number, signal: AbortSignal): Promise<void> {
    const now = Date.now();
    const at = Math.max(this.#next, now);
    this.#next = at + (events / this.#perSecond) * 1000;
    if (at > now) await pause(at - now, signal);
  }
}
