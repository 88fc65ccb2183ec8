import { parentPort, workerData } from 'node:worker_threads';
import { executeServing } from '../execute.ts';
import { loadParquetTable } from './parquet-table.ts';
import type { ActorInit, ExecuteServing, FromActor, ToActor } from './protocol.ts';
import { QueryActor } from './query-actor.ts';

/**
 * A query actor's thread (started by bin/query-actor.js, which registers the TypeScript loader): the actor,
 * with the messages of its port. Weir runs the rewrite's executor; a test may name a module of its own in
 * `executorModule` (an executor that crashes the thread, say), loaded before the first message is read.
 */
if (!parentPort) throw new Error('query-actor-thread.ts runs as a worker thread of the query pool');
const port = parentPort;
const init = workerData as ActorInit;

const execute: ExecuteServing = init.executorModule
  ? ((await import(init.executorModule)) as { executeServing: ExecuteServing }).executeServing
  : executeServing;
const actor = new QueryActor(
  { memoryBytes: init.memoryBytes },
  { post: (message: FromActor) => port.postMessage(message), execute, load: loadParquetTable },
);
port.on('message', (message: ToActor) => actor.receive(message));
