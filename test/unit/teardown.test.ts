/**
 * A role's teardown: steps run newest first, a failing one is logged and the rest still run, and while a step
 * waits the teardown says which it is, what exiting then would leave, and which steps have not run — what the
 * shutdown deadline's last line is made of (cli/run-until-signal.ts).
 */
import t from 'tap';
import { createLogger } from '../../src/core/logger.ts';
import { Teardown } from '../../src/roles/teardown.ts';

const silent = createLogger('silent');

t.test('while a step waits, the state names it, what it leaves, and the steps not run', async (t) => {
  const teardown = new Teardown(silent);
  const ran: string[] = [];
  let release!: () => void;
  const waiting = new Promise<void>((resolve) => (release = resolve));
  teardown.push('release the data directory', () => void ran.push('lock'));
  teardown.push('close the store', () => void ran.push('store'), 'rows stay in the commit log');
  teardown.push('stop consuming', () => waiting, 'batches stay on the bus');
  teardown.push('finish requests in progress', () => void ran.push('requests'));
  t.same(teardown.state(), {
    step: undefined,
    leaves: undefined,
    notRun: [
      'finish requests in progress',
      'stop consuming',
      'close the store',
      'release the data directory',
    ],
  });

  const run = teardown.run();
  await new Promise((resolve) => setImmediate(resolve));
  t.same(teardown.state(), {
    step: 'stop consuming',
    leaves: 'batches stay on the bus',
    notRun: ['close the store', 'release the data directory'],
  });
  release();
  await run;
  t.same(ran, ['requests', 'store', 'lock'], 'newest first');
  t.same(teardown.state(), { step: undefined, leaves: undefined, notRun: [] });
});

t.test('a failing step does not stop the rest; run rejects with the first failure', async (t) => {
  const teardown = new Teardown(silent);
  const ran: string[] = [];
  teardown.push('first', () => void ran.push('first'));
  teardown.push('second', () => Promise.reject(new Error('second failed')));
  teardown.push('third', () => {
    throw new Error('third failed');
  });
  await t.rejects(teardown.run(), { message: 'third failed' });
  t.same(ran, ['first'], 'the oldest step still ran');
  t.equal(teardown.state().step, undefined, 'no step is left running');
});
