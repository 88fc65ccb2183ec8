#!/usr/bin/env node
// The `weir` command. Weir is written in TypeScript and run through tsx's loader, so `npm start` and
// `npx weir …` work straight after `npm install` with no build step to forget.
import { register } from 'tsx/esm/api';

register();
const { tuneHeap } = await import('../src/core/heap-tuning.ts');
tuneHeap();
await import('../src/cli/main.ts');
