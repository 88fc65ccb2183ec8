/**
 * Output formats (SPEC §4 `format`, §3 the query API): a run or a query answered as CSV, NDJSON, Parquet or
 * Arrow carries the rows of its JSON answer, with the format's content type, read back by a reader of that
 * format; for a SQL endpoint (pages in `Weir-Has-More`), a trends, a funnel and a retention endpoint, a cached
 * and a materialized run; each format's own path (`…/run.csv`, …) answers as `format` does; an unknown
 * format is a 400; a large result is streamed and arrives whole, also to a client that reads slowly.
 */
import t, { type Test } from 'tap';
import {
  createEndpoint,
  endpointsApi,
  hogql,
  refused,
  runEndpoint,
  runOk,
  type RunBody,
} from '../helpers/endpoints.ts';
import {
  csvCellOf,
  fetchRaw,
  jsonRowsOf,
  readArrow,
  readCsv,
  readNdjson,
  readParquetTable,
  type Fetched,
} from '../helpers/output-formats.ts';
import { captureAll, createKey, ok, rawQuery, type QueryBody } from '../helpers/query-api.ts';
import { PERSONAL_API_KEY, startTestWeir, waitFor } from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());

// Four persons' pageviews and pageleaves at 12:00 UTC (the insights fixture of endpoints-insights.test.ts).
const PEOPLE: Record<string, { browser: string; pageviews: number[]; pageleaves: number[] }> = {
  p1: { browser: 'Chrome', pageviews: [11, 12, 13, 15, 17, 19], pageleaves: [11, 12, 13] },
  p2: { browser: 'Firefox', pageviews: [9, 12], pageleaves: [13] },
  p3: { browser: 'Edge', pageviews: [12], pageleaves: [13] },
  p4: { browser: 'Safari, "the" one', pageviews: [15], pageleaves: [16] },
};
const batch: Record<string, unknown>[] = [];
for (const [id, p] of Object.entries(PEOPLE)) {
  for (const [event, days] of [
    ['$pageview', p.pageviews],
    ['$pageleave', p.pageleaves],
  ] as const) {
    for (const day of days) {
      batch.push({
        event,
        distinct_id: id,
        timestamp: `2020-01-${String(day).padStart(2, '0')}T12:00:00Z`,
        properties: { $browser: p.browser, price: day * 1.5 },
      });
    }
  }
}
await captureAll(w, batch);

const FORMATS = ['csv', 'ndjson', 'parquet', 'arrow'] as const;
type Format = (typeof FORMATS)[number];
const CONTENT_TYPES: Record<Format, string> = {
  csv: 'text/csv; charset=utf-8',
  ndjson: 'application/x-ndjson',
  parquet: 'application/vnd.apache.parquet',
  arrow: 'application/vnd.apache.arrow.stream',
};

/** The answer's bytes read back as the JSON answer's columns and rows, by the format's own reader. */
function decode(
  format: Format,
  res: Fetched,
  types: readonly string[],
  many: boolean,
): { columns: string[]; rows: unknown[][] } {
  switch (format) {
    case 'csv': {
      // CSV has no types: its cells are compared with the JSON values written as CSV writes them (and
      // whether they are quoted, but for many rows: that costs the parser several times its parse).
      const { header, rows } = many ? readCsv(res.body, false) : readCsv(res.body);
      return { columns: header, rows };
    }
    case 'ndjson': {
      const objects = readNdjson(res.body);
      return { columns: Object.keys(objects[0] ?? {}), rows: objects.map((o) => Object.values(o)) };
    }
    case 'arrow': {
      const table = readArrow(res.body);
      return { columns: table.schema.fields.map((f) => f.name), rows: jsonRowsOf(table, types) };
    }
    case 'parquet': {
      const table = readParquetTable(res.body);
      return { columns: table.schema.fields.map((f) => f.name), rows: jsonRowsOf(table, types) };
    }
  }
}

/** Checks a format's answer against the JSON answer: content type, columns, every row. */
function sameRows(
  t: Test,
  format: Format,
  res: Fetched,
  json: { results: unknown[][]; columns: string[]; types: string[] },
  label: string,
): void {
  t.equal(res.status, 200, `${label} ${format}: 200 (${res.status === 200 ? '' : res.body.toString()})`);
  t.equal(res.headers['content-type'], CONTENT_TYPES[format], `${label} ${format}: content type`);
  const many = json.results.length > 1000;
  const decoded = decode(format, res, json.types, many);
  if (json.results.length > 0 || format !== 'ndjson')
    t.same(decoded.columns, json.columns, `${label} ${format}: columns`);
  const expected =
    format !== 'csv'
      ? json.results
      : json.results.map((r) => r.map((v) => (many ? csvCellOf(v).text : csvCellOf(v))));
  t.equal(decoded.rows.length, json.results.length, `${label} ${format}: as many rows`);
  if (!many) {
    t.same(decoded.rows, expected, `${label} ${format}: the same rows`);
    return;
  }
  // Many rows: compared as JSON text, row by row (a deep comparison of them all is slow), the first
  // difference shown.
  const differs = expected.findIndex((row, i) => JSON.stringify(row) !== JSON.stringify(decoded.rows[i]));
  t.equal(
    differs,
    -1,
    `${label} ${format}: the same rows${differs < 0 ? '' : ` (row ${differs}: ${JSON.stringify(decoded.rows[differs])}, not ${JSON.stringify(expected[differs])})`}`,
  );
}

const base = `${w.url}/api/projects/1`;
const runUrl = (name: string, query = ''): string => `${base}/endpoints/${name}/run${query}`;

// A row of many types: integers of each width, floats, a decimal, booleans, dates and times, text with
// the characters CSV quotes, NULLs, the empty string, arrays, a tuple and a map.
const TYPED = `SELECT number AS n, toInt8(toInt64(number) - 3) AS i8, toUInt16(number * 1000) AS u16, toInt32(toInt64(number) - 5) AS i32,
  toUInt64(number) * 1000000000000 AS u64, toInt64(number) - 2 AS i64, toUInt64('18446744073709551615') AS max_u64,
  toFloat64(number) / 3 AS f64, toFloat32(number / 3) AS f32, toDecimal64(number, 2) / 4 AS dec,
  toBool(number % 2 = 0) AS even, toDate('2026-01-01') + number AS d, toDate32('1960-05-01') AS d32,
  toDateTime('2026-01-01 00:00:00', 'UTC') + number AS dt, toDateTime64('2026-01-01 00:00:00.123456', 6, 'UTC') AS dt64,
  toDateTime64('1969-12-31 23:59:59.5', 3, 'UTC') AS before_epoch, toDateTime('2026-01-01 00:00:00', 'Asia/Tokyo') AS tokyo,
  concat('a,"b"', char(10), toString(number)) AS tricky, if(number % 3 = 0, NULL, toString(number)) AS maybe, '' AS empty,
  [toString(number), 'x'] AS arr, [number, number + 1] AS nums, tuple(number, 'x') AS tup, map('k', number) AS m,
  toUUID('00000000-0000-0000-0000-00000000000a') AS id, 'é ✓' AS unicode
  FROM numbers(7) ORDER BY n`;

t.test('the query API answers each format with the rows of its JSON answer', async (t) => {
  const json = await ok(w, TYPED);
  t.equal(json.results.length, 7);
  for (const format of FORMATS) {
    const res = await fetchRaw(`${base}/query/`, { body: { query: hogql(TYPED), format } });
    sameRows(t, format, res, json, 'query');
  }
  const explicit = await fetchRaw(`${base}/query/`, { body: { query: hogql(TYPED), format: 'json' } });
  t.equal(explicit.headers['content-type'], 'application/json');
  t.same(
    (JSON.parse(explicit.body.toString()) as QueryBody).results,
    json.results,
    'format json: as without it',
  );
});

t.test('a result of no rows: the header, no line, the schema, a file of no row group', async (t) => {
  const NONE = "SELECT 'x' AS s, toUInt64(1) AS n, now() AS at FROM numbers(3) WHERE number > 5";
  const json = await ok(w, NONE);
  t.same(json.results, []);
  for (const format of FORMATS) {
    const res = await fetchRaw(`${base}/query/`, { body: { query: hogql(NONE), format } });
    sameRows(t, format, res, json, 'no rows');
  }
  const csv = await fetchRaw(`${base}/query/`, { body: { query: hogql(NONE), format: 'csv' } });
  t.equal(csv.body.toString(), 's,n,at\r\n', 'CSV: the header line alone');
  const ndjson = await fetchRaw(`${base}/query/`, { body: { query: hogql(NONE), format: 'ndjson' } });
  t.equal(ndjson.body.length, 0, 'NDJSON: no line');
});

t.test('the Arrow and Parquet types carry the ClickHouse types over', async (t) => {
  const json = await ok(w, TYPED);
  for (const format of ['arrow', 'parquet'] as const) {
    const res = await fetchRaw(`${base}/query/`, { body: { query: hogql(TYPED), format } });
    const table = format === 'arrow' ? readArrow(res.body) : readParquetTable(res.body);
    const types = Object.fromEntries(table.schema.fields.map((f) => [f.name, String(f.type)]));
    t.match(
      types,
      {
        n: 'Uint64',
        i8: 'Int8',
        u16: 'Uint16',
        i32: 'Int32',
        u64: 'Uint64',
        i64: 'Int64',
        f64: 'Float64',
        f32: 'Float32',
        dec: 'Float64',
        even: 'Bool',
        d: 'Date32<DAY>',
        d32: 'Date32<DAY>',
        dt: 'Timestamp<SECOND, UTC>',
        dt64: 'Timestamp<MICROSECOND, UTC>',
        before_epoch: 'Timestamp<MILLISECOND, UTC>',
        tokyo: 'Utf8',
        tricky: 'Utf8',
        maybe: 'Utf8',
        arr: 'List<Utf8>',
        nums: 'List<Uint64>',
        tup: 'Utf8',
        m: 'Utf8',
        id: 'Utf8',
      },
      `${format}: the Arrow types (ClickHouse: ${json.types.join(', ')})`,
    );
  }
});

t.test('an unknown format is refused with the usual error body', async (t) => {
  await createEndpoint(w, { name: 'plain', query: hogql('SELECT 1 AS one') });
  refused(
    t,
    await rawQuery(w, { query: hogql('SELECT 1'), format: 'xml' }),
    400,
    'invalid_input',
    'format',
    'query',
  );
  refused(
    t,
    await rawQuery(w, { query: hogql('SELECT 1'), format: 5 }),
    400,
    'invalid_input',
    'format',
    'a number',
  );
  refused(t, await runEndpoint(w, 'plain', { format: 'CSV' }), 400, 'invalid_input', 'format', 'POST run');
  refused(
    t,
    await runEndpoint(w, 'plain', undefined, { method: 'GET', query: 'format=excel' }),
    400,
    'invalid_input',
    'format',
    'GET run',
  );
  refused(
    t,
    await runEndpoint(w, 'plain', { format: 'csv', debug: true }),
    400,
    'invalid_input',
    'debug',
    'debug',
  );
  const fine = await fetchRaw(runUrl('plain', '?format=csv'));
  t.equal(fine.body.toString(), 'one\r\n1\r\n', 'GET takes format in its query string');
  t.equal(fine.headers['content-type'], CONTENT_TYPES.csv);
});

t.test('a SQL endpoint: each format, its pages in Weir-Has-More, GET and POST alike', async (t) => {
  await createEndpoint(w, {
    name: 'by-browser',
    query:
      hogql(`SELECT properties.$browser AS browser, count() AS n, sum(toFloat64OrZero(properties.price)) AS total,
      groupArray(event) AS events, max(timestamp) AS last
      FROM events WHERE timestamp >= {variables.since} GROUP BY browser ORDER BY browser`),
    variables: { since: { type: 'date' } },
  });
  const variables = { since: '2020-01-01' };
  const page = await runOk(w, 'by-browser', { variables, limit: 2, offset: 1 });
  t.equal(page.results.length, 2);
  t.equal(page.hasMore, true);
  const last = await runOk(w, 'by-browser', { variables, limit: 2, offset: 3 });
  t.equal(last.hasMore, false);
  for (const format of FORMATS) {
    const res = await fetchRaw(runUrl('by-browser'), { body: { variables, limit: 2, offset: 1, format } });
    sameRows(t, format, res, page, 'page');
    t.equal(res.headers['weir-has-more'], 'true', `${format}: more rows follow`);
    t.equal(res.headers['weir-endpoint-version'], '1');
    t.equal(
      res.headers['weir-last-refresh'],
      page.last_refresh,
      `${format}: the same result as the JSON page`,
    );
    t.equal(res.headers['weir-endpoint-materialized-at'], undefined, 'not materialized');
    const viaGet = await fetchRaw(
      runUrl(
        'by-browser',
        `?variables=${encodeURIComponent(JSON.stringify(variables))}&limit=2&offset=3&format=${format}`,
      ),
    );
    sameRows(t, format, viaGet, last, 'GET last page');
    t.equal(viaGet.headers['weir-has-more'], 'false', `${format}: the last page`);
  }
});

t.test("each format's own path answers as format does, and takes no format field", async (t) => {
  await createEndpoint(w, {
    name: 'own-paths',
    query: hogql(`SELECT properties.$browser AS browser, count() AS n FROM events
      WHERE timestamp >= {variables.since} GROUP BY browser ORDER BY browser`),
    variables: { since: { type: 'date' } },
  });
  const variables = { since: '2020-01-01' };
  const page = await runOk(w, 'own-paths', { variables, limit: 2, offset: 1 });
  t.equal(page.hasMore, true);
  const query = `variables=${encodeURIComponent(JSON.stringify(variables))}&limit=2&offset=1`;
  const writer = await createKey(w, { scopes: ['endpoint:write'], projects: [1] });
  for (const format of FORMATS) {
    const path = `own-paths/run.${format}`;
    const res = await fetchRaw(`${base}/endpoints/${path}`, { body: { variables, limit: 2, offset: 1 } });
    sameRows(t, format, res, page, 'own path');
    t.equal(res.headers['weir-has-more'], 'true', `${format}: more rows follow`);
    t.equal(res.headers['weir-last-refresh'], page.last_refresh, `${format}: the JSON page's result`);
    const viaGet = await fetchRaw(`${w.url}/api/environments/1/endpoints/${path}?${query}`);
    sameRows(t, format, viaGet, page, 'own path, GET on the environments form');
    refused(
      t,
      await endpointsApi(w, 'POST', path, { variables, format }),
      400,
      'unknown_field',
      'format',
      `${format}: the path gives the format, the body does not`,
    );
    refused(
      t,
      await endpointsApi(w, 'GET', `${path}?${query}&format=json`),
      400,
      'unknown_field',
      'format',
      `${format}: nor the query string`,
    );
    refused(
      t,
      await endpointsApi(w, 'POST', path, { variables, debug: true }),
      400,
      'invalid_input',
      'debug',
      `${format}: debug`,
    );
    refused(
      t,
      await endpointsApi(w, 'POST', path, {}),
      400,
      'missing_variable',
      'variables',
      `${format}: variables`,
    );
    refused(
      t,
      await endpointsApi(w, 'POST', `nope/run.${format}`, {}),
      404,
      'not_found',
      null,
      `${format}: 404`,
    );
    refused(
      t,
      await endpointsApi(w, 'POST', path, { variables }, { key: '' }),
      401,
      'not_authenticated',
      null,
      `${format}: no key`,
    );
    refused(
      t,
      await endpointsApi(w, 'POST', path, { variables }, { key: writer.value }),
      403,
      'missing_scope',
      null,
      `${format}: no endpoint:read`,
    );
    const put = await endpointsApi(w, 'PUT', path, {});
    refused(t, put, 405, 'method_not_allowed', null, `${format}: PUT`);
    t.equal(put.headers.get('allow'), 'POST, GET');
  }
});

t.test('a cached run answers each format from the cache, and JSON after it too', async (t) => {
  await createEndpoint(w, {
    name: 'cached',
    query: hogql(
      'SELECT event, count() AS n, min(timestamp) AS first FROM events GROUP BY event ORDER BY event',
    ),
  });
  const first = await fetchRaw(runUrl('cached'), { body: { format: 'csv' } });
  t.equal(first.headers['weir-is-cached'], 'false', 'computed by this run');
  const json = await runOk(w, 'cached');
  t.equal(json.is_cached, true, 'JSON after CSV: the cached result');
  t.equal(json.last_refresh, first.headers['weir-last-refresh']);
  sameRows(t, 'csv', first, json, 'computed');
  for (const format of FORMATS) {
    for (let i = 0; i < 2; i++) {
      const res = await fetchRaw(runUrl('cached'), { body: { format } });
      t.equal(res.headers['weir-is-cached'], 'true', `${format} #${i + 1}: cached`);
      t.equal(res.headers['weir-last-refresh'], json.last_refresh, `${format}: the same result`);
      sameRows(t, format, res, json, `cached #${i + 1}`);
    }
  }
  // The memo of repeated JSON answers holds JSON bytes only: the same request in another format is another.
  const again = await runOk(w, 'cached');
  t.equal(again.is_cached, true);
  const csv = await fetchRaw(runUrl('cached'), { body: { format: 'csv' } });
  t.equal(csv.headers['content-type'], CONTENT_TYPES.csv, 'never the JSON bytes of the memo');
});

const RANGE = { date_from: '2020-01-09', date_to: '2020-01-19' };

t.test('insight endpoints: trends, funnels and retention tables in each format', async (t) => {
  await createEndpoint(w, {
    name: 'pageviews',
    query: {
      kind: 'TrendsQuery',
      series: [
        { kind: 'EventsNode', event: '$pageview' },
        { kind: 'EventsNode', event: '$pageleave', math: 'dau' },
      ],
      dateRange: RANGE,
      breakdownFilter: { breakdown: '$browser', breakdown_type: 'event' },
    },
  });
  await createEndpoint(w, {
    name: 'view-then-leave',
    query: {
      kind: 'FunnelsQuery',
      series: [
        { kind: 'EventsNode', event: '$pageview' },
        { kind: 'EventsNode', event: '$pageleave' },
      ],
      dateRange: RANGE,
      funnelsFilter: { funnelWindowInterval: 1, funnelWindowIntervalUnit: 'day' },
      breakdownFilter: { breakdown: '$browser', breakdown_type: 'event' },
    },
  });
  await createEndpoint(w, {
    name: 'returning',
    query: {
      kind: 'RetentionQuery',
      dateRange: { date_from: '2020-01-11', date_to: '2020-01-15' },
      retentionFilter: { period: 'Day', totalIntervals: 3 },
    },
  });
  const shapes: Record<string, string[]> = {
    pageviews: ['series_index', 'series', 'breakdown_value', 'date', 'value'],
    'view-then-leave': [
      'breakdown_value',
      'step',
      'event',
      'count',
      'conversion_rate',
      'average_conversion_time',
      'median_conversion_time',
    ],
    returning: ['cohort_date', 'cohort_size', 'period', 'count'],
  };
  for (const [name, columns] of Object.entries(shapes)) {
    const json = await runOk(w, name, { refresh: 'force' });
    t.same(json.columns, columns, `${name}: the insight's table`);
    t.ok(json.results.length > 3, `${name}: ${json.results.length} rows`);
    for (const format of FORMATS) {
      const res = await fetchRaw(runUrl(name), { body: { format } });
      sameRows(t, format, res, json, name);
      t.equal(res.headers['weir-has-more'], 'false');
    }
  }
  // A magic variable narrows the table in every format alike.
  const chrome = await runOk(w, 'pageviews', { variables: { $browser: 'Chrome' } });
  t.ok(chrome.results.every((r) => r[2] === 'Chrome'));
  sameRows(
    t,
    'arrow',
    await fetchRaw(runUrl('pageviews'), { body: { variables: { $browser: 'Chrome' }, format: 'arrow' } }),
    chrome,
    'Chrome',
  );
});

t.test('a materialized run answers each format from the materialization', async (t) => {
  await createEndpoint(w, {
    name: 'materialized',
    query:
      hogql(`SELECT properties.$browser AS browser, count() AS n, sum(toFloat64OrZero(properties.price)) AS total
      FROM events WHERE event = {variables.event} GROUP BY browser ORDER BY browser`),
    variables: { event: { type: 'string' } },
    is_materialized: true,
  });
  const done = await waitFor(
    async () => {
      const e = (await endpointsApi(w, 'GET', 'materialized/')).json as {
        materialization: { status: string; last_materialized_at: string | null };
      };
      return e.materialization.status === 'completed' ? e.materialization : undefined;
    },
    30_000,
    'the materialization',
  );
  const variables = { event: '$pageview' };
  const json: RunBody = await runOk(w, 'materialized', { variables, refresh: 'force' });
  t.equal(json.endpoint_materialized, true);
  const direct = await runOk(w, 'materialized', { variables, refresh: 'direct' });
  t.same(json.results, direct.results, 'the materialization has the raw data’s rows');
  for (const format of FORMATS) {
    const res = await fetchRaw(runUrl('materialized'), { body: { variables, refresh: 'force', format } });
    sameRows(t, format, res, json, 'materialized');
    t.equal(res.headers['weir-endpoint-materialized-at'], done.last_materialized_at, `${format}: from it`);
    const raw = await fetchRaw(runUrl('materialized'), { body: { variables, refresh: 'direct', format } });
    sameRows(t, format, raw, direct, 'direct');
    t.equal(raw.headers['weir-endpoint-materialized-at'], undefined, `${format} direct: the raw data`);
  }
});

// The most rows a result may have (the run limits' maxResultRows), each ~150 bytes of CSV.
const LARGE = 50_000;
const LARGE_SQL = `SELECT number AS n, toString(number * 7) AS s, repeat('x', 100) AS pad, number / 4 AS q,
  toDateTime('2026-01-01 00:00:00', 'UTC') + number AS at FROM numbers(${LARGE}) ORDER BY n`;

t.test('a large result is streamed and arrives whole, to a slow reader too', async (t) => {
  const json = await ok(w, LARGE_SQL);
  t.equal(json.results.length, LARGE);
  // JSON too, to a client that reads late: the answer is written as the socket takes it, never sent twice.
  const late = await fetchRaw(`${base}/query/`, { body: { query: hogql(LARGE_SQL) }, readAfterMs: 300 });
  t.same((JSON.parse(late.body.toString()) as QueryBody).results, json.results, 'JSON read late: whole');
  for (const format of FORMATS) {
    for (const readAfterMs of [0, 300]) {
      const res = await fetchRaw(`${base}/query/`, {
        body: { query: hogql(LARGE_SQL), format },
        readAfterMs,
      });
      const label = `${LARGE} rows${readAfterMs ? ', read late' : ''}`;
      if (format !== 'parquet') {
        t.equal(res.headers['transfer-encoding'], 'chunked', `${format}: written a piece at a time`);
      } else
        t.equal(
          Number(res.headers['content-length']),
          res.body.length,
          'parquet: made whole, sent with its length',
        );
      sameRows(t, format, res, json, label);
    }
  }
});

t.test('a client that goes away mid-stream leaves the server answering', async (t) => {
  const http = await import('node:http');
  await new Promise<void>((resolve, reject) => {
    const req = http.request(`${base}/query/`, {
      method: 'POST',
      agent: false,
      headers: {
        authorization: `Bearer ${PERSONAL_API_KEY}`,
        'content-type': 'application/json',
      },
    });
    req.on('response', (res) => {
      res.once('data', () => {
        req.destroy();
        resolve();
      });
    });
    req.on('error', (err) =>
      (err as NodeJS.ErrnoException).code === 'ECONNRESET' ? resolve() : reject(err),
    );
    req.end(JSON.stringify({ query: hogql(LARGE_SQL), format: 'ndjson' }));
  });
  const after = await fetchRaw(`${base}/query/`, {
    body: { query: hogql('SELECT 1 AS one'), format: 'ndjson' },
  });
  t.equal(after.body.toString(), '{"one":1}\n', 'the next request is answered');
  const ready = await fetchRaw(`${w.url}/_ready`);
  t.equal(ready.status, 200);
});
