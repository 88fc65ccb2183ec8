import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { CatalogState, type CatalogSnapshot } from '../catalog/catalog-state.ts';
import { writeAtomically } from '../catalog/file-catalog.ts';
import { KvCatalog } from '../catalog/kv-catalog.ts';
import { natsServers, replicasFor } from '../bus/jetstream/connection.ts';
import { loadConfig, type Config } from '../config/config.ts';

/**
 * `weir catalog export` prints a catalog as JSON (the file catalog's own format: keys as hashes, never their
 * values): the KV bucket when a NATS URL is given, else `catalog.json` of the data directory. `weir catalog
 * import FILE|-` fills an empty catalog with such JSON: the KV bucket when a NATS URL is given, else the data
 * directory's file. Piped together they move a catalog from the embedded file to NATS KV, or back
 * (docs/scaling.md). An import never overwrites: a catalog that exists already is refused.
 */
export async function runCatalog(
  flags: Record<string, string | undefined>,
  positionals: readonly string[],
): Promise<number> {
  const [action, ...rest] = positionals;
  for (const [name, value] of Object.entries(flags)) {
    if (name !== 'data-dir' && name !== 'nats-url' && value !== undefined) {
      throw new Error(`catalog does not take --${name}`);
    }
  }
  const config = loadConfig(
    process.env,
    Object.fromEntries(Object.entries(flags).filter(([, v]) => v !== undefined)),
  );
  if (action === 'export' && rest.length === 0) {
    const snapshot = config.natsUrl ? await fromKv(config.natsUrl, config) : await fromFile(config.dataDir);
    process.stdout.write(`${JSON.stringify(snapshot, null, 2)}\n`);
    return 0;
  }
  if (action === 'import' && rest.length === 1) {
    const text = rest[0] === '-' ? await readStdin() : await readFile(rest[0]!, 'utf8');
    const snapshot = readExport(text);
    const where = config.natsUrl
      ? await toKv(config.natsUrl, config, snapshot)
      : await toFile(config.dataDir, snapshot);
    process.stderr.write(
      `imported ${snapshot.projects.length} projects, ${snapshot.personalApiKeys.length} keys and ${snapshot.endpoints.length} endpoints into ${where}\n`,
    );
    return 0;
  }
  throw new Error('usage: weir catalog export | weir catalog import FILE|-  (with --nats-url for NATS KV)');
}

/** An export as `weir catalog export` writes it, checked before anything is written from it. */
function readExport(text: string): CatalogSnapshot {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new Error(`not a catalog export: ${(err as Error).message}`, { cause: err });
  }
  const r = raw as Partial<Record<keyof CatalogSnapshot, unknown>> | null;
  if (
    typeof r !== 'object' ||
    r === null ||
    r.version !== 1 ||
    !Number.isSafeInteger(r.nextProjectId) ||
    !Array.isArray(r.projects) ||
    !Array.isArray(r.personalApiKeys)
  ) {
    throw new Error('not a catalog export: it needs version 1, nextProjectId, projects and personalApiKeys');
  }
  return CatalogState.fromJson(text).snapshot;
}

async function fromFile(dataDir: string): Promise<CatalogSnapshot> {
  const path = join(dataDir, 'catalog.json');
  if (!existsSync(path)) throw new Error(`there is no catalog at ${path}`);
  return CatalogState.fromJson(await readFile(path, 'utf8')).snapshot;
}

async function toFile(dataDir: string, snapshot: CatalogSnapshot): Promise<string> {
  const path = join(dataDir, 'catalog.json');
  if (existsSync(path)) throw new Error(`${path} exists already: an import never overwrites a catalog`);
  await mkdir(dataDir, { recursive: true });
  await writeAtomically(path, snapshot);
  return path;
}

async function fromKv(url: string, config: Config): Promise<CatalogSnapshot> {
  const bucket = config.catalogBucket;
  const nc = await connect({ servers: natsServers(url), name: 'weir catalog export' });
  try {
    // Opening an empty bucket would bootstrap it: an export must read what is there, so check first.
    const { Kvm } = await import('@nats-io/kv');
    const kvs = new Kvm(nc);
    const names: string[] = [];
    for await (const status of kvs.list()) names.push(status.bucket);
    if (!names.includes(bucket)) throw new Error(`NATS at ${url} has no catalog bucket '${bucket}'`);
    const catalog = await KvCatalog.open(nc, {
      bucket,
      bootstrap: false,
      bootstrapProjectApiKey: undefined,
      bootstrapPersonalApiKey: undefined,
    });
    try {
      return catalog.snapshot();
    } finally {
      await catalog.close();
    }
  } finally {
    await nc.close();
  }
}

async function toKv(url: string, config: Config, snapshot: CatalogSnapshot): Promise<string> {
  const bucket = config.catalogBucket;
  const nc = await connect({ servers: natsServers(url), name: 'weir catalog import' });
  try {
    await KvCatalog.importSnapshot(nc, { bucket, replicas: replicasFor(nc, config.natsReplicas) }, snapshot);
    return `the NATS KV bucket '${bucket}' at ${url}`;
  } finally {
    await nc.close();
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
