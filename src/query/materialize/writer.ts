/**
 * Writes one refresh of a version's materialization (SPEC §4): the engine runs the materialization query
 * and writes its result as Parquet (zstd) to a local file, the file is streamed to object storage under
 * `materializations/<project>/<endpoint id>/v<version>/`, and then the version's manifest is moved to it.
 *
 * The order makes a crash at any point safe: the new object is complete before the manifest names it (an
 * object put is whole or absent), the catalog is told only after the manifest moved, and the previous object
 * is removed only after that — so whatever is served (the catalog's object) always exists, and an object a
 * crash left unnamed is swept by the next refresh of the version.
 */
import { randomUUID } from 'node:crypto';
import { createReadStream, mkdirSync, openAsBlob } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ParquetFile } from 'parquet-wasm';
import type { Logger } from '../../core/logger.ts';
import type { ObjectStore } from '../../core/object-store.ts';
import type { ParquetExporter, TableReader } from '../../core/ports.ts';
import type { QueryLimits } from '../clickhouse/printer.ts';
import { describeMaterialization, materializationSql, type MaterializationPlan } from './rewrite.ts';
import type { ServingPlan } from './serving.ts';

/** What a completed refresh made. */
export interface WrittenMaterialization {
  readonly objectKey: string;
  readonly rows: number;
  readonly bytes: number;
  /** When the refresh started: the time the result is of. */
  readonly at: string;
  /** The serving plan with the stored columns' types, as the manifest keeps it. */
  readonly serving: ServingPlan;
}

/** The manifest of a version's materialization: the one object being served, and how to serve it. */
export interface Manifest extends WrittenMaterialization {
  readonly version: 1;
}

export interface WriterDeps {
  readonly store: TableReader & ParquetExporter;
  readonly objects: ObjectStore;
  readonly logger: Logger;
}

export interface WriterConfig {
  /** Where the engine writes the Parquet file before it is put to object storage. */
  readonly tmpDir: string;
  /** A refresh's limits: longer and larger than a run's (it reads the whole range, its result is stored). */
  readonly limits: QueryLimits;
}

/** `materializations/<project>/<endpoint id>/v<version>/`: a version's objects. */
export function versionPrefix(projectId: number, endpointId: string, version: number): string {
  return `materializations/${projectId}/${endpointId}/v${version}/`;
}

export class MaterializationWriter {
  readonly #deps: WriterDeps;
  readonly #config: WriterConfig;

  constructor(config: WriterConfig, deps: WriterDeps) {
    this.#config = config;
    this.#deps = deps;
    mkdirSync(config.tmpDir, { recursive: true });
  }

  /** Runs the plan, stores its result and moves the manifest; resolves once the new result is named. */
  async write(
    plan: MaterializationPlan,
    target: { readonly projectId: number; readonly endpointId: string; readonly version: number },
    startedAt: Date,
  ): Promise<WrittenMaterialization> {
    const { store, objects } = this.#deps;
    const serving = await describeMaterialization(plan, store, target.projectId);
    const { sql, params } = materializationSql(plan, target.projectId);
    const file = join(this.#config.tmpDir, `materialize-${randomUUID()}.parquet`);
    try {
      await store.exportParquet(`${sql} SETTINGS ${settings(this.#config.limits)}`, params, file, {
        maxWaitMs: this.#config.limits.maxExecutionSeconds * 1000,
        project: target.projectId,
        kind: 'materialize',
      });
      const bytes = (await stat(file)).size;
      const rows = await parquetRows(file);
      const prefix = versionPrefix(target.projectId, target.endpointId, target.version);
      const objectKey = `${prefix}${startedAt.toISOString().replace(/[:.]/g, '-')}-${randomUUID()}.parquet`;
      await objects.putStream(objectKey, createReadStream(file));
      const written: WrittenMaterialization = {
        objectKey,
        rows,
        bytes,
        at: startedAt.toISOString(),
        serving,
      };
      const manifest: Manifest = { version: 1, ...written };
      await objects.put(`${prefix}manifest.json`, Buffer.from(JSON.stringify(manifest)));
      return written;
    } finally {
      await rm(file, { force: true });
    }
  }

  /**
   * Removes a version's objects but the one being served (the previous result once the catalog names the
   * new one, and any a crash left unnamed). A failure is only logged: an extra object costs space, not answers.
   */
  async sweep(projectId: number, endpointId: string, version: number, keep: string): Promise<void> {
    const prefix = versionPrefix(projectId, endpointId, version);
    try {
      for await (const entry of this.#deps.objects.list(prefix)) {
        if (entry.key === keep || entry.key === `${prefix}manifest.json`) continue;
        await this.#deps.objects.delete(entry.key);
      }
    } catch (err) {
      this.#deps.logger.warn(
        { err, prefix },
        'materialization sweep failed; old objects stay until the next refresh',
      );
    }
  }

  /** Removes every object of a version (its endpoint was deleted, or materialization turned off). */
  async removeVersion(projectId: number, endpointId: string, version: number): Promise<void> {
    const prefix = versionPrefix(projectId, endpointId, version);
    for await (const entry of this.#deps.objects.list(prefix)) await this.#deps.objects.delete(entry.key);
  }
}

/** The rows of a Parquet file, from its footer (the file is not read whole). */
async function parquetRows(path: string): Promise<number> {
  const file = await ParquetFile.fromFile(await openAsBlob(path));
  try {
    return file.metadata().fileMetadata().numRows();
  } finally {
    file.free();
  }
}

/** A refresh's SETTINGS clause: its limits, the Parquet codec, then `readonly` (which must come last). */
function settings(limits: QueryLimits): string {
  return [
    `max_execution_time = ${limits.maxExecutionSeconds}`,
    `max_memory_usage = ${limits.maxMemoryBytes}`,
    `output_format_parquet_compression_method = 'zstd'`,
    // A pool actor's WebAssembly memory grows to its largest row group and never shrinks: keep them small.
    `output_format_parquet_row_group_size = 65536`,
    `readonly = 1`,
  ].join(', ');
}
