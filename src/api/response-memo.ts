/**
 * Answers remembered by the exact request that got them, for a route whose answers repeat: a cached endpoint
 * run asked again with the same bytes. Such a request is answered with the same bytes again without being
 * parsed, authenticated, bound or looked up, for as long as the answer says it still holds (`holds`): the
 * route decides that (for a run: the catalog has not changed since, and the cached result it came from is
 * still cached and young enough), so a memo hit never answers what the full path would not.
 *
 * The key is everything of the request the answer can depend on: method, path, query string, the
 * `Authorization` header and the body, so two callers with different keys never share an entry. Bounded in
 * entries, key length and answer bytes (an answer that no longer holds may be a result its cache has let go,
 * kept only here until its request comes again); the oldest entry goes first.
 */

/** An answer that may be sent again to the same request while `holds()` is true. */
export interface Memorable {
  /** The whole body, JSON, sent with status 200. */
  readonly json: Buffer;
  readonly holds: () => boolean;
}

export interface ResponseMemoOptions {
  /** @default 4096 */
  readonly maxEntries?: number;
  /** Longer requests (as key text) are not remembered. @default 4096 */
  readonly maxKeyLength?: number;
  /** Bytes of answers held together; an answer over an eighth of it is not remembered. @default 64 MiB */
  readonly maxBytes?: number;
}

export class ResponseMemo {
  readonly #entries = new Map<string, Memorable>();
  readonly #maxEntries: number;
  readonly #maxKeyLength: number;
  readonly #maxBytes: number;
  #bytes = 0;

  constructor(options: ResponseMemoOptions = {}) {
    this.#maxEntries = options.maxEntries ?? 4096;
    this.#maxKeyLength = options.maxKeyLength ?? 4096;
    this.#maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Bytes of the answers held. */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * The key of a request, or undefined for one too long to remember (its body is not even read then). Each
   * part but the last is preceded by its length, so two different requests never share a key whatever bytes
   * their parts hold; the body is read as latin1, one character a byte.
   */
  key(
    method: string,
    url: string,
    query: string,
    authorization: string,
    body: Buffer | undefined,
  ): string | undefined {
    const head = `${method} ${url.length}:${url}${query.length}:${query}${authorization.length}:${authorization}`;
    const bodyLength = body?.length ?? 0;
    if (head.length + bodyLength > this.#maxKeyLength) return undefined;
    return bodyLength === 0 ? head : head + body!.toString('latin1');
  }

  /** The answer remembered for `key` if it still holds; one that no longer holds is forgotten. */
  get(key: string): Buffer | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.holds()) return entry.json;
    this.#delete(key, entry);
    return undefined;
  }

  set(key: string, entry: Memorable): void {
    if (entry.json.length > this.#maxBytes / 8) return;
    const old = this.#entries.get(key);
    if (old) this.#delete(key, old);
    for (const [k, e] of this.#entries) {
      if (this.#entries.size < this.#maxEntries && this.#bytes + entry.json.length <= this.#maxBytes) break;
      this.#delete(k, e);
    }
    this.#entries.set(key, entry);
    this.#bytes += entry.json.length;
  }

  #delete(key: string, entry: Memorable): void {
    this.#entries.delete(key);
    this.#bytes -= entry.json.length;
  }
}
