import t from 'tap';
import { StoreThrottled } from '../../src/core/ports.ts';
import { AdhocLimit } from '../../src/store/adhoc-limit.ts';

t.test("the server store's ad-hoc limit is per project, and a place comes back when a query ends", (t) => {
  let refused = 0;
  const limit = new AdhocLimit(2, () => refused++);
  const first = limit.take(1);
  limit.take(1);
  t.throws(() => limit.take(1), StoreThrottled, 'a third of project 1 is refused');
  t.throws(
    () => limit.take(1),
    /project 1 already has 2 ad-hoc queries running, its limit \(WEIR_QUERY_ADHOC_CONCURRENCY\)/,
  );
  t.equal(refused, 2);
  const other = limit.take(2);
  t.ok(other, 'another project is not');
  first();
  first();
  limit.take(1);
  t.throws(() => limit.take(1), StoreThrottled, 'a release counts once');
  t.end();
});
