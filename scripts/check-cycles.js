#!/usr/bin/env node
// Fails when src/ has an import cycle or an import against the layering of DESIGN.md
// (`api → query → store`, `capture → bus`, `ingest → bus, store`; `catalog → kv`, `bus → kv`, `ingest → kv`,
// the compare-and-set over NATS KV they share; no layer imports main.ts or cli/; roles/, the composition of
// `weir capture|ingest`, is imported only by main.ts and cli/).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..', 'src');
const files = [];
(function walk(dir) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (p.endsWith('.ts')) files.push(p);
  }
})(root);

const IMPORT = /^\s*(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]/gm;
const graph = new Map();
for (const f of files) {
  const deps = [];
  for (const m of readFileSync(f, 'utf8').matchAll(IMPORT)) deps.push(resolve(dirname(f), m[1]));
  graph.set(f, deps);
}

/** Which top-level folders each folder may import (besides itself); core, errors, config are open to all. */
const ALLOWED = {
  core: [],
  errors: [],
  config: [],
  http: [],
  store: [],
  // The compare-and-set over a NATS KV bucket, below every layer that keeps state in one.
  kv: [],
  catalog: ['kv'],
  bus: ['kv'],
  // The ObjectStore adapters: the port is in core/, and only composition (roles/, cli/, main.ts) picks one.
  objects: [],
  capture: ['bus', 'http', 'catalog'],
  ingest: ['bus', 'store', 'kv'],
  query: ['store', 'catalog'],
  api: ['query', 'store', 'catalog', 'http'],
  // Erasure, retention and project deletion: the store and catalog through their ports.
  lifecycle: ['store', 'catalog', 'objects'],
  // The web console's static files and their routes.
  console: ['http'],
  roles: ['*'],
  cli: ['*'],
  'main.ts': ['*'],
};
const SHARED = new Set(['core', 'errors', 'config']);
const layer = (f) => relative(root, f).split('/')[0];

const problems = [];
for (const [f, deps] of graph) {
  const from = layer(f);
  for (const d of deps) {
    const to = layer(d);
    if (to === from || SHARED.has(to)) continue;
    const allowed = ALLOWED[from] ?? [];
    if (to === 'main.ts' || to === 'cli') {
      if (from !== 'cli')
        problems.push(`${relative(root, f)} imports ${relative(root, d)} (nothing imports main.ts or cli/)`);
      continue;
    }
    if (to === 'roles' && from !== 'main.ts' && from !== 'cli') {
      problems.push(
        `${relative(root, f)} imports ${relative(root, d)} (only main.ts and cli/ import roles/)`,
      );
      continue;
    }
    if (!allowed.includes('*') && !allowed.includes(to))
      problems.push(`${relative(root, f)} imports ${relative(root, d)} (${from} may not import ${to})`);
  }
}

const state = new Map();
const stack = [];
function visit(f) {
  state.set(f, 1);
  stack.push(f);
  for (const d of graph.get(f) ?? []) {
    if (!graph.has(d)) continue;
    if (state.get(d) === 1)
      problems.push(
        `import cycle: ${[...stack.slice(stack.indexOf(d)), d].map((x) => relative(root, x)).join(' → ')}`,
      );
    else if (!state.has(d)) visit(d);
  }
  stack.pop();
  state.set(f, 2);
}
for (const f of graph.keys()) if (!state.has(f)) visit(f);

if (problems.length > 0) {
  console.error(problems.join('\n'));
  process.exit(1);
}
console.log(`imports: ${files.length} files, no cycles, layering holds`);
