#!/usr/bin/env node
// The `weir` command. Weir is written in TypeScript and run through tsx's loader, so `npm start` and
// `npx weir …` work straight after `npm install` with no build step to forget.
import { setFlagsFromString } from 'node:v8';
import { register } from 'tsx/esm/api';

// V8 sets the next full GC a little above the heap that survived the last one when marking is fast next to
// the allocation rate: with the steady trickle of request objects a server promotes, that was a mark-compact
// (a 4-20 ms pause) every ~1.2 s at 5,000 capture requests/s. Letting the old generation grow to three times
// what survives (V8's own ceiling is four) makes them over ten times rarer, for a heap about twice the size.
// A --heap-growing-percent given to node itself wins.
if (!process.execArgv.some((arg) => arg.startsWith('--heap-growing-percent'))) {
  setFlagsFromString('--heap-growing-percent=200');
}

register();
await import('../src/cli/main.ts');
