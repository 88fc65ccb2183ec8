#!/usr/bin/env node
// The `weir` command. Weir is written in TypeScript and run through tsx's loader, so `npm start` and
// `npx weir …` work straight after `npm install` with no build step to forget. The launcher comes first: it
// may start the process again with the launch settings, and only the process that runs Weir loads the rest.
import { launch } from './launcher.js';

if (launch()) {
  const { register } = await import('tsx/esm/api');
  register();
  const { tuneHeap } = await import('../src/core/heap-tuning.ts');
  tuneHeap();
  await import('../src/cli/main.ts');
}
