import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { REPO_ROOT } from '../../bench/capture/child-processes.ts';
import {
  WEIR_LAUNCH_ENV,
  WEIR_LAUNCH_NODE_ARGS,
  benchWeirEnv,
  benchWeirNodeArgs,
} from '../../bench/capture/targets.ts';

// The soak measured memory with these settings; a launcher that drops one runs a Weir nobody measured.
t.test(
  'npm start, the Docker image and the benches run Weir with the same allocator and heap settings',
  (t) => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    const start = pkg.scripts['start']!;
    const dockerfile = readFileSync(join(REPO_ROOT, 'deploy/Dockerfile'), 'utf8');
    for (const [key, value] of Object.entries(WEIR_LAUNCH_ENV)) {
      t.match(start, `${key}=${value} `, `npm start sets ${key}`);
      t.match(dockerfile, new RegExp(`ENV[^\\n]*\\b${key}=${value}\\b`), `the image sets ${key}`);
    }
    for (const arg of WEIR_LAUNCH_NODE_ARGS) {
      t.match(start, `node ${arg} `, `npm start gives node ${arg}`);
      t.match(dockerfile, new RegExp(`NODE_OPTIONS=${arg}\\b`), `the image gives node ${arg}`);
    }
    t.match(benchWeirEnv(), WEIR_LAUNCH_ENV, 'benches start Weir with the same environment');
    t.same(benchWeirNodeArgs().slice(0, WEIR_LAUNCH_NODE_ARGS.length), WEIR_LAUNCH_NODE_ARGS);
    t.end();
  },
);
