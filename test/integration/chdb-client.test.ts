/**
 * The embedded store's engine client's own insert paths on real chDB: rows given as values
 * (JSONCompactEachRow) through the client, and as bytes with a column list, as the commit log's applier hands
 * them over. (The server store's inserts: server-store.test.ts.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createLogger } from '../../src/core/logger.ts';
import type { Row } from '../../src/core/ports.ts';
import { ChdbClient } from '../../src/store/embedded/chdb-client.ts';
import { migrate } from '../../src/store/migrate.ts';
import { eventRows } from '../helpers/rows.ts';

const dir = mkdtempSync(join(tmpdir(), 'weir-clickhouse-store-'));
const store = ChdbClient.open(join(dir, 'chdb'));
await migrate(store, createLogger('silent'));
t.teardown(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const stored = (tag: string): Promise<Row[]> =>
  store.query<Row>(
    `SELECT uuid, distinct_id, properties, $group_0 FROM events WHERE event = {tag:String} ORDER BY distinct_id`,
    { tag },
  );

t.test(
  'rows given as values are inserted in the order of their columns; the rest take defaults',
  async (t) => {
    const rows = eventRows('values-client', 3);
    const columns = Object.keys(rows[0]!);
    // An object for a String column is stored as its JSON text, as with rows given as objects.
    const values = rows.map((r) => columns.map((c) => (c === 'properties' ? { n: r['distinct_id'] } : r[c])));
    await store.insertValues('events', columns, values);
    t.same(
      await stored('values-client'),
      rows.map((r) => ({
        uuid: r['uuid'],
        distinct_id: r['distinct_id'],
        properties: JSON.stringify({ n: r['distinct_id'] }),
        $group_0: '',
      })),
    );
  },
);

t.test('bytes of rows given as values are inserted with their column list', async (t) => {
  const rows = eventRows('values-raw', 4);
  const columns = Object.keys(rows[0]!);
  const lines = rows.map((r) => JSON.stringify(columns.map((c) => r[c])));
  // Rows separated by commas, across the pieces, as the applier joins frames.
  await store.insertRaw(
    'events',
    [Buffer.from(lines.slice(0, 2).join(',')), Buffer.from(','), Buffer.from(lines.slice(2).join(','))],
    'values-raw-token',
    columns,
  );
  t.same(
    (await stored('values-raw')).map((r) => r['uuid']),
    rows.map((r) => r['uuid']),
  );
});
