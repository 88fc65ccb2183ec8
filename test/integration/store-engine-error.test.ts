/**
 * A statement the engine fails part-way through leaves nothing behind for the calls after it. chDB keeps the
 * bytes a failed statement had already written (a header of names and types, or rows) on its connection and
 * hands them out ahead of the next statement's own answer, so a later query read another's column names as
 * rows, and the store's own lookups would have read them as rows too.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createLogger } from '../../src/core/logger.ts';
import { StoreQueryError } from '../../src/core/ports.ts';
import { ChdbClient } from '../../src/store/embedded/chdb-client.ts';
import { migrate } from '../../src/store/migrate.ts';
import { eventRows } from '../helpers/rows.ts';

const dir = mkdtempSync(join(tmpdir(), 'weir-store-engine-error-'));
const store = ChdbClient.open(join(dir, 'chdb'));
await migrate(store, createLogger('silent'));
t.teardown(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});
await store.insert('events', eventRows('not a time', 2));

/**
 * Queries the engine fails while it runs them, after it has begun its answer: one once the header is written
 * (the event name is read as a time row by row), one after five blocks of rows.
 */
const FAILING = {
  'after the header': 'SELECT toDateTime(event) AS t FROM events',
  'after rows': 'SELECT number, throwIf(number = 5000) FROM numbers(10000) SETTINGS max_block_size = 1000',
};

const COUNT = 'SELECT count() AS n FROM events';
const COUNTED = { columns: ['n'], types: ['UInt64'], rows: [[2]], rowCount: 1 };

/** The count's table, its rows cut short: a leftover can be thousands of rows, too many to print in a diff. */
async function count(): Promise<unknown> {
  const { columns, types, rows } = await store.queryTable(COUNT, {});
  return { columns, types, rows: rows.slice(0, 4), rowCount: rows.length };
}

for (const [when, sql] of Object.entries(FAILING)) {
  t.test(`a query that fails ${when} leaves the next query its own answer`, async (t) => {
    await t.rejects(store.queryTable(sql, {}), StoreQueryError);
    t.same(await count(), COUNTED, 'names, types and rows of the next query only');
    t.same(await count(), COUNTED, 'and of the one after');
  });

  t.test(
    `after a query that fails ${when}, the store's own reads and writes see only their rows`,
    async (t) => {
      await t.rejects(store.queryTable(sql, {}), StoreQueryError);
      // Ingest's person and group lookups read objects, one a line: a leftover line would be a row to them.
      t.same(await store.query(COUNT), [{ n: 2 }]);
      await t.rejects(store.queryTable(sql, {}), StoreQueryError);
      await store.insert('ingestion_warnings', [
        { project_id: 1, type: when, source: 's', details: '{}', timestamp: '2026-01-01 00:00:00' },
      ]);
      t.same(
        await store.query('SELECT count() AS n FROM ingestion_warnings WHERE type = {when:String}', { when }),
        [{ n: 1 }],
      );
    },
  );
}

t.test('failures one after another leave nothing either', async (t) => {
  for (const sql of [...Object.values(FAILING), ...Object.values(FAILING)]) {
    await t.rejects(store.queryTable(sql, {}), StoreQueryError);
  }
  // Refused before it runs (a parameter the query does not get): it writes nothing, and clears nothing.
  await t.rejects(store.queryTable('SELECT {x:UInt8}', {}), StoreQueryError);
  t.same(await count(), COUNTED);
});
