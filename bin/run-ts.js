#!/usr/bin/env node
// Runs a TypeScript file (benchmarks, scripts) with tsx's loader: `node bin/run-ts.js FILE [ARGS…]`.
import { register } from 'tsx/esm/api';
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';

const file = process.argv[2];
if (!file) {
  console.error('usage: node bin/run-ts.js FILE.ts [ARGS…]');
  process.exit(2);
}
process.argv.splice(1, 1);
register();
await import(pathToFileURL(resolve(file)).href);
