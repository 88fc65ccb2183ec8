/**
 * Output formats through a `weir query` node (SPEC §4 `format`): the node runs a query or an endpoint on the
 * store owner's store API and encodes what it gets itself, so each format carries the rows of the JSON
 * answer there as on the owner. Real nats-server (the catalog), real chDB in the owner, HTTP on loopback.
 */
import { rmSync } from 'node:fs';
import t from 'tap';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/core/logger.ts';
import { startIngestRole } from '../../src/roles/ingest-role.ts';
import { startQueryRole } from '../../src/roles/query-role.ts';
import { createEndpoint, hogql, runOk } from '../helpers/endpoints.ts';
import { startNatsServer } from '../helpers/nats-server.ts';
import {
  csvCellOf,
  fetchRaw,
  jsonRowsOf,
  readArrow,
  readCsv,
  readNdjson,
  readParquetTable,
} from '../helpers/output-formats.ts';
import { ok } from '../helpers/query-api.ts';
import { PERSONAL_API_KEY, PROJECT_API_KEY, request, tempDir, waitFor } from '../helpers/weir.ts';

const TOKEN = 'store-token-for-format-tests-0123';
const nats = await startNatsServer();
t.teardown(() => nats.close());
const dirs: string[] = [];
t.teardown(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const configOf = (env: Record<string, string>): ReturnType<typeof loadConfig> => {
  const dir = tempDir();
  dirs.push(dir);
  return loadConfig({
    WEIR_PORT: '0',
    WEIR_DATA_DIR: dir,
    WEIR_NATS_URL: nats.url,
    WEIR_CATALOG: 'nats',
    WEIR_STORE_TOKEN: TOKEN,
    WEIR_BOOTSTRAP_PROJECT_API_KEY: PROJECT_API_KEY,
    WEIR_BOOTSTRAP_PERSONAL_API_KEY: PERSONAL_API_KEY,
    WEIR_LOG_LEVEL: process.env['WEIR_TEST_LOG_LEVEL'] ?? 'silent',
    ...env,
  });
};
const ingestConfig = configOf({});
const ingest = await startIngestRole(ingestConfig, createLogger(ingestConfig.logLevel));
t.teardown(() => ingest.close());
const nodeConfig = configOf({ WEIR_STORE_URL: ingest.url });
const node = await startQueryRole(nodeConfig, createLogger(nodeConfig.logLevel));
t.teardown(() => node.close());
await waitFor(
  async () => ((await request(`${node.url}/_ready`)).status === 200 ? true : undefined),
  20_000,
  'query node ready',
);

const SQL = `SELECT number AS n, toString(number) AS s, if(number % 4 = 0, NULL, number / 8) AS q,
  toDateTime64('2026-01-01 00:00:00', 3, 'UTC') + number AS at, [number, 1] AS pair, concat('a,"', toString(number)) AS odd
  FROM numbers(3000) ORDER BY n`;

t.test('a query node answers each format with the owner’s rows', async (t) => {
  const onOwner = await ok(ingest, SQL);
  const onNode = await ok(node, SQL);
  t.same(onNode.results, onOwner.results, 'JSON: the same rows');
  const base = `${node.url}/api/projects/1/query/`;
  const body = (format: string): unknown => ({ query: hogql(SQL), format });
  const csv = await fetchRaw(base, { body: body('csv') });
  t.equal(csv.headers['content-type'], 'text/csv; charset=utf-8');
  const parsed = readCsv(csv.body);
  t.same(parsed.header, onOwner.columns);
  t.same(
    parsed.rows,
    onOwner.results.map((r) => r.map(csvCellOf)),
    'CSV',
  );
  const ndjson = await fetchRaw(base, { body: body('ndjson') });
  t.same(
    readNdjson(ndjson.body).map((o) => Object.values(o)),
    onOwner.results,
    'NDJSON',
  );
  const arrow = await fetchRaw(base, { body: body('arrow') });
  t.same(jsonRowsOf(readArrow(arrow.body), onOwner.types), onOwner.results, 'Arrow');
  const parquet = await fetchRaw(base, { body: body('parquet') });
  t.same(jsonRowsOf(readParquetTable(parquet.body), onOwner.types), onOwner.results, 'Parquet');
});

t.test('an endpoint run on a query node in each format, cached and not', async (t) => {
  await createEndpoint(node, {
    name: 'numbers',
    query: hogql(`SELECT number AS n, number * {variables.k} AS m FROM numbers(100) ORDER BY n`),
    variables: { k: { type: 'number' } },
  });
  const json = await runOk(node, 'numbers', { variables: { k: 3 }, limit: 10, offset: 5, refresh: 'force' });
  t.equal(json.hasMore, true);
  const url = `${node.url}/api/projects/1/endpoints/numbers/run`;
  for (const refresh of ['force', 'cache']) {
    const res = await fetchRaw(url, {
      body: { variables: { k: 3 }, limit: 10, offset: 5, refresh, format: 'arrow' },
    });
    t.equal(res.headers['content-type'], 'application/vnd.apache.arrow.stream');
    t.equal(res.headers['weir-has-more'], 'true');
    t.equal(res.headers['weir-is-cached'], refresh === 'cache' ? 'true' : 'false', refresh);
    t.same(jsonRowsOf(readArrow(res.body), json.types), json.results, `${refresh}: the same rows`);
  }
});
