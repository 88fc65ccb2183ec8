import t from 'tap';
import type { ImportOptions } from '../../src/import/importer.ts';
import { ImportUsageError, parseImportArgs } from '../../src/import/options.ts';

const base = ['events.jsonl', '--url', 'http://127.0.0.1:8000', '--api-key', 'phc_x'];
const parse = (...extra: string[]): ImportOptions => parseImportArgs([...base, ...extra]) as ImportOptions;

t.test('--batch-size: 5000 by default, up to the 100,000 events capture takes a request', (t) => {
  t.equal(parse().batchSize, 5000);
  t.equal(parse('--batch-size', '100000').batchSize, 100_000);
  t.throws(
    () => parse('--batch-size', '100001'),
    new ImportUsageError("--batch-size takes at most 100000 (capture's limit a request), got '100001'"),
  );
  t.throws(() => parse('--batch-size', '0'), { message: /whole number above 0/ });
  t.throws(() => parse('--batch-size', '2.5'), { message: /whole number above 0/ });
  t.end();
});
