import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { INGEST_BUCKET } from './ingest-bucket.ts';

/**
 * Where the embedded store's owner (`weir ingest` with WEIR_STORE_TOKEN) serves its store API, recorded in the
 * ingest bucket, so a `weir query` node finds it through NATS without WEIR_STORE_URL (docs/scaling.md). Only
 * the URL: the token stays a secret the operator gives both. An owner that stops cleanly removes its record;
 * one that dies leaves it, and the next owner's replaces it.
 */
const KEY = 'store-owner';

export interface StoreOwnerRecord {
  readonly url: string;
  readonly pid: number;
  readonly since: string;
}

async function bucket(nc: NatsConnection, replicas: number): Promise<KV> {
  // Made with `replicas` if it does not exist (the bus may not have made it yet); an existing one is kept.
  return new Kvm(nc).create(INGEST_BUCKET, { replicas, history: 1 });
}

/** Records this process as the owner at `url`; resolves with what removes the record (on a clean stop). */
export async function advertiseStoreOwner(
  nc: NatsConnection,
  replicas: number,
  url: string,
): Promise<() => Promise<void>> {
  const kv = await bucket(nc, replicas);
  const record: StoreOwnerRecord = { url, pid: process.pid, since: new Date().toISOString() };
  const revision = await kv.put(KEY, JSON.stringify(record));
  return async () => {
    // Only its own record: a new owner may already have replaced it.
    const entry = await kv.get(KEY);
    if (entry?.revision === revision) await kv.delete(KEY);
  };
}

/**
 * Follows the owner's record: calls `changed` with its URL now and after each change, and resolves once there
 * is one (rejecting after `timeoutMs` without one). The watch goes on until `stop`.
 */
export async function followStoreOwner(
  nc: NatsConnection,
  replicas: number,
  timeoutMs: number,
  changed: (url: string) => void,
): Promise<{ url: string; stop: () => void }> {
  const kv = await bucket(nc, replicas);
  const watch = await kv.watch({ key: KEY });
  let first: ((url: string) => void) | undefined;
  const found = new Promise<string>((resolve) => (first = resolve));
  void (async () => {
    for await (const entry of watch) {
      if (entry.operation !== 'PUT') continue;
      const url = (entry.json<StoreOwnerRecord>() as Partial<StoreOwnerRecord>).url;
      if (typeof url !== 'string') continue;
      changed(url);
      first?.(url);
      first = undefined;
    }
    // A watch that ends with an error (the connection closed) leaves the node on the URL it has.
  })().catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `no store owner has advertised its store API in the NATS KV bucket '${INGEST_BUCKET}' within ` +
              `${timeoutMs / 1000} s: start weir ingest with WEIR_STORE_TOKEN (the embedded store), or set ` +
              'WEIR_STORE_URL',
          ),
        ),
      timeoutMs,
    );
  });
  try {
    const url = await Promise.race([found, timeout]);
    return { url, stop: () => watch.stop() };
  } catch (err) {
    watch.stop();
    throw err;
  } finally {
    clearTimeout(timer);
  }
}
