import { parentPort, workerData } from 'node:worker_threads';
import { loadParquetTable } from './parquet-table.ts';
import type { ActorInit, ExecuteServing, FromActor, ToActor } from './protocol.ts';
import { QueryActor } from './query-actor.ts';

/**
 * A query actor's thread (started by bin/query-actor.js, which registers the TypeScript loader). The executor
 * is loaded by URL so that tests can put a module of their own in its place; Weir always runs the rewrite's.
 */
const DEFAULT_EXECUTOR = new URL('../execute.ts', import.meta.url).href;

if (!parentPort) throw new Error('query-actor-thread.ts runs as a worker thread of the query pool');
const port = parentPort;
const init = workerData as ActorInit;

const module = (await import(init.executorModule ?? DEFAULT_EXECUTOR)) as { executeServing: ExecuteServing };
const actor = new QueryActor(
  { memoryBytes: init.memoryBytes },
  {
    post: (message: FromActor) => port.postMessage(message),
    execute: module.executeServing,
    load: loadParquetTable,
  },
);
port.on('message', (message: ToActor) => actor.receive(message));
