/** How a nats-server's version and `/varz` read as durable acknowledgements or not (durability.ts). */
import t from 'tap';
import { assessServer } from '../../src/bus/jetstream/durability.ts';

const varz = (config: Record<string, unknown>): { jetstream: { config: Record<string, unknown> } } => ({
  jetstream: { config },
});

t.test('sync_interval: always on a fixed version is durable', (t) => {
  const s = assessServer('n1', '2.11.4', varz({ sync_always: true }));
  t.same(s, { server: 'n1', version: '2.11.4', sync: 'always', problems: [] });
  t.end();
});

t.test('the default (every two minutes) and an interval set are not, and say how much can be lost', (t) => {
  const byDefault = assessServer('n1', '2.12.1', varz({}));
  t.equal(byDefault.sync, 'interval');
  t.equal(byDefault.syncIntervalMs, 120_000);
  const set = assessServer('n1', '2.12.1', varz({ sync_interval: 10e9 }));
  t.equal(set.syncIntervalMs, 10_000);
  t.match(set.problems[0], /syncs every 10 s, after acknowledging/);
  t.end();
});

t.test('2.10.20 to 2.10.22 lose whole streams even syncing always; 2.10.23 does not', (t) => {
  for (const v of ['2.10.20', '2.10.21', '2.10.22'])
    t.match(assessServer('n', v, varz({ sync_always: true })).problems, [
      /known data-loss bug.*fixed in 2\.10\.23/,
    ]);
  t.same(assessServer('n', '2.10.23', varz({ sync_always: true })).problems, []);
  t.end();
});

t.test('unknown without a monitoring port; before 2.10 never durable', (t) => {
  t.match(assessServer('n', '2.11.0', undefined), { sync: 'unknown', problems: [/WEIR_NATS_MONITOR_URL/] });
  t.match(assessServer('n', '2.9.10', varz({})), { sync: 'interval', problems: [/came in 2\.10/] });
  t.end();
});
