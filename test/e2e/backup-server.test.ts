/**
 * A restorable copy of a Weir on a ClickHouse server (docs/operations.md, "Backup and restore"): the catalog
 * with `weir catalog export`, then ClickHouse's own BACKUP of Weir's database to S3 (moto), restored into a
 * new database with `weir catalog import` into a new catalog. Run against the test front (chDB behind
 * ClickHouse's HTTP interface) or the server of WEIR_TEST_CLICKHOUSE_URL.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createClient } from '@clickhouse/client';
import t from 'tap';
import { clickHouseForTest } from '../clickhouse-front/start.ts';
import { bearer } from '../helpers/persons.ts';
import { startS3Server } from '../helpers/s3-server.ts';
import { startServerWeir } from '../helpers/server-weir.ts';
import { PROJECT_API_KEY, post, request, runWeir, tempDir, waitFor } from '../helpers/weir.ts';

const auth = bearer();

t.test(
  'weir catalog export and ClickHouse BACKUP to S3 restore into a Weir that answers as the first',
  async (t) => {
    const ch = await clickHouseForTest();
    t.teardown(() => ch.stop());
    const s3 = await startS3Server();
    t.teardown(() => s3.close());
    await s3.createBucket('weir-backups');
    const admin = createClient({ url: ch.url, password: ch.password ?? '' });
    t.teardown(() => admin.close());

    const w = await startServerWeir(t, ch, 'backup_src');
    const batch = Array.from({ length: 500 }, (_, i) => ({
      event: i % 2 ? '$pageview' : 'signed up',
      distinct_id: `u${i % 25}`,
      properties: { $browser: i % 3 ? 'Chrome' : 'Safari', $set: { plan: i % 2 ? 'free' : 'pro' } },
    }));
    t.equal((await post(`${w.url}/batch/`, JSON.stringify({ api_key: PROJECT_API_KEY, batch }))).status, 200);
    const created = await request(`${w.url}/api/projects/1/endpoints/`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({
        name: 'browsers',
        query: {
          kind: 'HogQLQuery',
          query: 'SELECT properties.$browser AS b, count() AS n FROM events GROUP BY b ORDER BY b',
        },
      }),
    });
    t.equal(created.status, 201, created.text);
    const run = (url: string): Promise<unknown> =>
      request(`${url}/api/projects/1/endpoints/browsers/run`, {
        method: 'POST',
        headers: auth,
        body: '{}',
      }).then((r) => (r.json as { results: unknown }).results);
    const answer = await run(w.url);
    t.same(answer, [
      ['Chrome', 333],
      ['Safari', 167],
    ]);

    // 1. The catalog first: a deletion it records as done was done in the tables before the BACKUP began.
    const exported = await runWeir(['catalog', 'export', '--data-dir', w.dataDir]);
    t.equal(exported.code, 0, exported.stderr);
    const catalogFile = join(tempDir(), 'catalog.json');
    writeFileSync(catalogFile, exported.stdout);
    // 2. ClickHouse's own BACKUP of Weir's database, as an operator runs it with clickhouse-client.
    const source = `weir_backup_src_${process.pid}`;
    const copy = `weir_backup_copy_${process.pid}`;
    const target = `S3('${s3.endpoint}/weir-backups/clickhouse/${source}', 'test', 'test')`;
    await admin.command({ query: `BACKUP DATABASE \`${source}\` TO ${target}` });

    // 3. Restored into a new database, the catalog into a new data directory.
    await admin.command({ query: `RESTORE DATABASE \`${source}\` AS \`${copy}\` FROM ${target}` });
    const dataDir = tempDir();
    const imported = await runWeir(['catalog', 'import', catalogFile, '--data-dir', dataDir]);
    t.equal(imported.code, 0, imported.stderr);

    const digest = async (database: string): Promise<Record<string, string>> => {
      const names = await (
        await admin.query({
          query: `SELECT name FROM system.tables WHERE database = {db:String} ORDER BY name`,
          query_params: { db: database },
          format: 'JSONEachRow',
        })
      ).json<{ name: string }>();
      const out: Record<string, string> = {};
      for (const { name } of names) {
        const [row] = await (
          await admin.query({
            query: `SELECT toString(count()) AS n, toString(sum(cityHash64(formatRow('TSV', *)))) AS h FROM \`${database}\`.\`${name}\``,
            format: 'JSONEachRow',
          })
        ).json<{ n: string; h: string }>();
        out[name] = `${row!.n} rows, ${row!.h}`;
      }
      return out;
    };
    const want = await digest(source);
    t.ok(Object.keys(want).includes('events'));
    t.same(await digest(copy), want, 'every table, row for row');

    const restored = await startServerWeir(t, ch, 'backup_copy', { WEIR_DATA_DIR: dataDir });
    t.same(await run(restored.url), answer, 'the endpoint answers as before');
    const persons = await request(`${restored.url}/api/projects/1/persons/?distinct_id=u3`, {
      headers: auth,
    });
    t.equal((persons.json as { results: unknown[] }).results.length, 1, 'the persons are there');
    const more = await post(
      `${restored.url}/batch/`,
      JSON.stringify({ api_key: PROJECT_API_KEY, batch: [{ event: 'after', distinct_id: 'u3' }] }),
    );
    t.equal(more.status, 200, "the project's key is taken");
    await waitFor(
      async () => {
        const r = await request(`${restored.url}/api/projects/1/query/`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify({
            query: { kind: 'HogQLQuery', query: "SELECT count() FROM events WHERE event = 'after'" },
          }),
        });
        return (r.json as { results?: number[][] }).results?.[0]?.[0] === 1 ? true : undefined;
      },
      20_000,
      'the new event',
    );
  },
);
