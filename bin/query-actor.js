// A query actor of the materialization pool (src/query/materialize/pool/query-actor-thread.ts). A worker
// thread has a module loader of its own: tsx is registered here, as bin/weir.js does for the main thread.
import { register } from 'tsx/esm/api';

register();
await import('../src/query/materialize/pool/query-actor-thread.ts');
