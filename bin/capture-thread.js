// A capture thread of `weir start` (src/roles/capture-thread.ts). A worker thread has a module loader of its
// own: tsx is registered here, as bin/weir.js does for the main thread.
import { register } from 'tsx/esm/api';

register();
await import('../src/roles/capture-thread.ts');
