/**
 * The web console (SPEC §5, `GET /console`) on a real embedded Weir: its files are served with their types,
 * ETags and a Content-Security-Policy of 'self' only; then, in headless Chromium, a person signs in, browses
 * endpoints, runs a SQL, a trends, a funnel and a retention endpoint and sees each as its chart, runs an ad-hoc
 * query and watches the counters, with no console error, no failed request, and data shown as text.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/core/logger.ts';
import { startQueryRole } from '../../src/roles/query-role.ts';
import { launchBrowser, watchPage } from '../helpers/browser.ts';
import { startNatsServer } from '../helpers/nats-server.ts';
import { createEndpoint, runOk } from '../helpers/endpoints.ts';
import { captureAll, createProject, ok } from '../helpers/query-api.ts';
import {
  PERSONAL_API_KEY,
  post,
  PROJECT_API_KEY,
  request,
  spawnWeir,
  startTestWeir,
  tempDir,
  waitFor,
} from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());

// Data the browser tests run on: a week of two people's events, one of which carries markup in its name.
const XSS = '<img src=x onerror="window.__xss=1">';
const DAYS = ['2026-01-05', '2026-01-06', '2026-01-07', '2026-01-08'];
const events: Record<string, unknown>[] = [];
for (const [i, day] of DAYS.entries()) {
  for (const person of ['ann', 'bob', 'cy'].slice(0, 3 - (i % 2))) {
    events.push({
      event: '$pageview',
      distinct_id: person,
      timestamp: `${day}T10:00:00Z`,
      properties: { $browser: person === 'ann' ? 'Chrome' : 'Firefox' },
    });
  }
  events.push({ event: 'signed up', distinct_id: `new-${i}`, timestamp: `${day}T09:00:00Z` });
  events.push({ event: 'paid', distinct_id: `new-${i}`, timestamp: `${day}T11:00:00Z` });
}
events.push({ event: XSS, distinct_id: 'ann', timestamp: `${DAYS[0]}T12:00:00Z` });
await captureAll(w, events);
await createProject(w, XSS);
await createEndpoint(w, {
  name: 'events-by-name',
  description: `Counts events by name ${XSS}`,
  query: {
    kind: 'HogQLQuery',
    query: 'SELECT event, count() AS n FROM events GROUP BY event ORDER BY n DESC, event',
  },
});
const RANGE = { date_from: DAYS[0], date_to: DAYS[DAYS.length - 1] };
await createEndpoint(w, {
  name: 'views',
  query: {
    kind: 'TrendsQuery',
    series: [{ kind: 'EventsNode', event: '$pageview' }],
    dateRange: RANGE,
    breakdownFilter: { breakdown: '$browser', breakdown_type: 'event' },
  },
});
await createEndpoint(w, {
  name: 'signup-to-paid',
  query: {
    kind: 'FunnelsQuery',
    series: [
      { kind: 'EventsNode', event: 'signed up' },
      { kind: 'EventsNode', event: 'paid' },
    ],
    dateRange: RANGE,
  },
});
await createEndpoint(w, {
  name: 'returning',
  query: {
    kind: 'RetentionQuery',
    dateRange: RANGE,
    retentionFilter: {
      period: 'Day',
      totalIntervals: 4,
      targetEntity: { id: '$pageview', type: 'events' },
      returningEntity: { id: '$pageview', type: 'events' },
    },
  },
});

// The browser part. `WEIR_CONSOLE_SCREENSHOTS=docs/console` also keeps a PNG of each view there (docs/console.md).
const SHOTS = process.env['WEIR_CONSOLE_SCREENSHOTS'];
if (SHOTS) mkdirSync(SHOTS, { recursive: true });
const browser = await launchBrowser();
t.teardown(() => browser.close());
const page = await browser.newPage();
await page.setViewport({ width: 1180, height: 820 });
const problems = watchPage(page);

const FILES: [string, RegExp][] = [
  ['/console', /^text\/html; charset=utf-8$/],
  ['/console/', /^text\/html; charset=utf-8$/],
  ['/console/console.js', /^text\/javascript; charset=utf-8$/],
  ['/console/api.js', /^text\/javascript; charset=utf-8$/],
  ['/console/dom.js', /^text\/javascript; charset=utf-8$/],
  ['/console/charts.js', /^text\/javascript; charset=utf-8$/],
  ['/console/results.js', /^text\/javascript; charset=utf-8$/],
  ['/console/metrics.js', /^text\/javascript; charset=utf-8$/],
  ['/console/console.css', /^text\/css; charset=utf-8$/],
  ['/console/favicon.svg', /^image\/svg\+xml$/],
  ['/console/vendor/chart.umd.js', /^text\/javascript; charset=utf-8$/],
];

t.test('every file of the console is served with its type, an ETag and the CSP', async (t) => {
  for (const [path, type] of FILES) {
    const res = await request(`${w.url}${path}`);
    t.equal(res.status, 200, `${path} answers`);
    t.match(res.headers.get('content-type'), type, `${path}: its content type`);
    t.match(res.headers.get('etag'), /^"[A-Za-z0-9_-]+(-gz)?"$/, `${path}: an ETag`);
    t.equal(res.headers.get('cache-control'), 'no-cache', `${path}: revalidated on each load`);
    const csp = res.headers.get('content-security-policy') ?? '';
    t.match(csp, /default-src 'self'/, `${path}: only 'self'`);
    t.match(csp, /script-src 'self'(;|$)/, `${path}: no inline script`);
    t.notMatch(csp, /unsafe-inline|unsafe-eval|https?:|\*/, `${path}: nothing but 'self'`);
    t.equal(res.headers.get('x-content-type-options'), 'nosniff');
    t.ok(res.text.length > 0, `${path}: a body`);
  }
});

t.test('the page loads its scripts from files, none inline', async (t) => {
  const page = (await request(`${w.url}/console`)).text;
  t.match(page, /<script type="module" src="\/console\/console.js"><\/script>/);
  t.match(page, /<script src="\/console\/vendor\/chart.umd.js" defer><\/script>/);
  t.notMatch(page, /<script>|<script type="module">|\son[a-z]+=/i, 'no inline script or handler');
  t.notMatch(page, /style=/, 'no inline style');
  const chart = await request(`${w.url}/console/vendor/chart.umd.js`);
  t.match(chart.text.slice(0, 2000), /Chart\.js v4\./, "Chart.js v4's UMD build, from node_modules");
});

t.test('an ETag revalidates: 304 with no body; gzip when asked, with its own tag', async (t) => {
  const first = await fetch(`${w.url}/console/console.js`, { headers: { 'accept-encoding': 'identity' } });
  const etag = first.headers.get('etag')!;
  t.equal(first.headers.get('content-encoding'), null);
  const again = await fetch(`${w.url}/console/console.js`, { headers: { 'if-none-match': etag } });
  t.equal(again.status, 304);
  t.equal(await again.text(), '');
  const chart = await fetch(`${w.url}/console/vendor/chart.umd.js`, {
    headers: { 'accept-encoding': 'gzip' },
  });
  t.equal(chart.status, 200);
  t.equal(chart.headers.get('content-encoding'), 'gzip');
  t.match(chart.headers.get('etag'), /-gz"$/);
  t.match((await chart.text()).slice(0, 2000), /Chart\.js/, 'fetch undoes the gzip');
  const changed = await fetch(`${w.url}/console/console.js`, { headers: { 'if-none-match': '"other"' } });
  t.equal(changed.status, 200);
});

t.test('HEAD answers the headers of a GET; other methods are 405; unknown files 404 as JSON', async (t) => {
  const get = await request(`${w.url}/console/console.css`, { headers: { 'accept-encoding': 'identity' } });
  const head = await fetch(`${w.url}/console/console.css`, {
    method: 'HEAD',
    headers: { 'accept-encoding': 'identity' },
  });
  t.equal(head.status, 200);
  t.equal(head.headers.get('content-length'), String(Buffer.byteLength(get.text)));
  t.equal(head.headers.get('content-type'), get.headers.get('content-type'));
  const post = await request(`${w.url}/console`, { method: 'POST', body: 'key=phx_x' });
  t.equal(post.status, 405);
  t.equal(post.headers.get('allow'), 'GET, HEAD');
  for (const path of ['/console/nope.js', '/console/vendor/other.js', '/console/../package.json']) {
    const res = await request(`${w.url}${path}`);
    t.equal(res.status, 404, `${path} is not served`);
    t.match(res.json, { type: 'not_found', code: 'not_found' });
  }
});

t.test(
  'weir start with capture threads serves the console on its public port, headers and all',
  async (t) => {
    const dataDir = tempDir();
    const spawned = await spawnWeir(dataDir, { WEIR_CAPTURE_THREADS: '1', WEIR_LOG_LEVEL: 'info' });
    t.teardown(async () => {
      spawned.child.kill('SIGTERM');
      await spawned.exited;
      rmSync(dataDir, { recursive: true, force: true });
    });
    // The first URL logged is the API's loopback port behind the threads; the public one comes with "weir is ready".
    const url = await waitFor(
      () =>
        Promise.resolve(/"url":"(http:\/\/[^"]+)"[^\n]*"msg":"weir is ready"/.exec(spawned.output())?.[1]),
      60_000,
      'the public URL',
    );
    const html = await fetch(`${url}/console`);
    t.equal(html.status, 200);
    t.match(await html.text(), /<script type="module" src="\/console\/console.js">/);
    t.match(html.headers.get('content-security-policy'), /^default-src 'self'/);
    const chart = await fetch(`${url}/console/vendor/chart.umd.js`, {
      headers: { 'accept-encoding': 'gzip' },
    });
    t.equal(chart.headers.get('content-encoding'), 'gzip');
    t.match((await chart.text()).slice(0, 200), /Chart\.js v4/);
    const again = await fetch(`${url}/console`, { headers: { 'if-none-match': html.headers.get('etag')! } });
    t.equal(again.status, 304);
  },
);

t.test('a weir query node serves the console too', async (t) => {
  const nats = await startNatsServer();
  t.teardown(() => nats.close());
  const dataDir = tempDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  // The files are static: a node whose store owner is away (nothing listens on port 9) still serves them.
  const config = loadConfig({
    WEIR_PORT: '0',
    WEIR_DATA_DIR: dataDir,
    WEIR_CATALOG: 'nats',
    WEIR_NATS_URL: nats.url,
    WEIR_STORE_URL: 'http://127.0.0.1:9',
    WEIR_STORE_TOKEN: 'store-token-for-tests-0123456789',
    WEIR_LOG_LEVEL: 'silent',
  });
  const node = await startQueryRole(config, createLogger(config.logLevel));
  t.teardown(() => node.close());
  for (const path of ['/console', '/console/console.js', '/console/vendor/chart.umd.js']) {
    const res = await request(`${node.url}${path}`);
    t.equal(res.status, 200, `${path} answers`);
    t.match(res.headers.get('content-security-policy'), /^default-src 'self'/);
  }
});

/** Evaluates `js` in the page (as text: the test's types have no DOM). */
function inPage<T>(js: string): Promise<T> {
  return page.evaluate(js) as Promise<T>;
}

async function shot(name: string): Promise<void> {
  if (SHOTS) await page.screenshot({ path: `${join(SHOTS, name)}.png`, fullPage: true });
}

interface DrawnChart {
  type: string;
  labels: string[];
  datasets: { label: string; data: number[] }[];
  /** Pixels of the first series' colour (#2563eb) on the canvas: the data was drawn, not just the axes. */
  seriesPixels: number;
  width: number;
}

/** The Chart.js chart in `figure[data-chart=kind]`, read from Chart.js itself and from the canvas's pixels. */
function drawnChart(kind: string): Promise<DrawnChart> {
  return inPage<DrawnChart>(`(() => {
    const canvas = document.querySelector('figure[data-chart="${kind}"] canvas');
    const chart = Chart.getChart(canvas);
    const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    let seriesPixels = 0;
    for (let i = 0; i < pixels.length; i += 4) {
      const [r, g, b, a] = [pixels[i], pixels[i + 1], pixels[i + 2], pixels[i + 3]];
      if (a > 100 && Math.abs(r - 37) < 12 && Math.abs(g - 99) < 12 && Math.abs(b - 235) < 12) seriesPixels++;
    }
    return {
      type: chart.config.type,
      labels: chart.data.labels.map(String),
      datasets: chart.data.datasets.map((d) => ({ label: d.label, data: d.data })),
      seriesPixels,
      width: canvas.width,
    };
  })()`);
}

async function openEndpoint(name: string): Promise<void> {
  await page.click(`a[data-endpoint="${name}"]`);
  await page.waitForFunction(
    `document.querySelector('#endpoint-name')?.textContent === ${JSON.stringify(name)}`,
  );
}

async function run(): Promise<string> {
  await page.click('#run');
  await page.waitForSelector('#result-meta, #result .error');
  return inPage<string>(`document.querySelector('#result').innerText`);
}

t.test(
  'signing in: a wrong key is refused and stays out; the right one is kept in the session only',
  async (t) => {
    await page.goto(`${w.url}/console`, { waitUntil: 'load' });
    await page.waitForSelector('#key');
    await page.type('#key', 'phx_not_a_key');
    await page.click('#sign-in button');
    await page.waitForFunction(`document.querySelector('#sign-in .error')?.textContent.length > 0`);
    t.match(
      await inPage<string>(`document.querySelector('#sign-in .error').textContent`),
      /not a personal API key/,
    );
    t.equal(await inPage(`sessionStorage.length`), 0, 'a refused key is not kept');
    await shot('sign-in');
    // The one refusal of the run: taken out of what the page may show.
    t.same(problems.errorResponses, [`401 GET ${w.url}/api/projects/`]);
    problems.errorResponses.length = 0;
    problems.consoleErrors.splice(
      0,
      problems.consoleErrors.length,
      ...problems.consoleErrors.filter((m) => !/401/.test(m)),
    );

    await page.$eval('#key', (el) => ((el as unknown as { value: string }).value = ''));
    await page.type('#key', PERSONAL_API_KEY);
    await page.click('#sign-in button');
    await page.waitForSelector('a[data-endpoint="events-by-name"]');
    t.equal(await inPage(`sessionStorage.getItem('weir.personalApiKey')`), PERSONAL_API_KEY);
    t.notMatch(page.url(), /phx_/, 'the key is not in the URL');
    t.match(page.url(), /\/console#\/projects\/1\/endpoints$/);
    t.same(
      await inPage<string[]>(
        `[...document.querySelectorAll('#endpoints a[data-endpoint]')].map((a) => a.textContent).sort()`,
      ),
      ['events-by-name', 'returning', 'signup-to-paid', 'views'].sort(),
    );
    t.same(
      await inPage<string[]>(`[...document.querySelectorAll('#project option')].map((o) => o.textContent)`),
      ['Default project (#1)', `${XSS} (#2)`],
      "a project's name is text",
    );
  },
);

t.test('a SQL endpoint: its query, its OpenAPI description, a run as bars and a table', async (t) => {
  await openEndpoint('events-by-name');
  t.equal(
    await inPage(`document.querySelector('#endpoint-query').textContent`),
    'SELECT event, count() AS n FROM events GROUP BY event ORDER BY n DESC, event',
  );
  t.equal(
    await inPage(`document.querySelector('#endpoint .description').textContent`),
    `Counts events by name ${XSS}`,
  );
  const openapi = JSON.parse(
    await inPage<string>(`document.querySelector('#endpoint-openapi').textContent`),
  ) as {
    openapi: string;
    info: { title: string };
  };
  t.match(openapi, { openapi: '3.0.3', info: { title: 'events-by-name' } });
  const text = await run();
  t.match(text, /version 1/);
  const api = await runOk(w, 'events-by-name');
  const chart = await drawnChart('sql');
  t.equal(chart.type, 'bar');
  t.same(
    chart.labels,
    api.results.map((r) => String(r[0])),
    'a bar per event, in the answer’s order',
  );
  t.same(chart.datasets, [{ label: 'n', data: api.results.map((r) => Number(r[1])) }]);
  t.ok(chart.seriesPixels > 500, `the bars are drawn (${chart.seriesPixels} pixels)`);
  const cells = await inPage<string[][]>(
    `[...document.querySelectorAll('#result .table-box tbody tr')].map((tr) => [...tr.cells].map((c) => c.textContent))`,
  );
  t.same(
    cells,
    api.results.map((r) => r.map(String)),
    'the table is the answer',
  );
  t.ok(
    cells.some((r) => r[0] === XSS),
    'an event named with markup is shown as its text',
  );
  t.equal(await inPage(`document.querySelectorAll('img').length`), 0, 'no element was made from data');
  t.equal(await inPage(`window.__xss`), undefined, 'no script of the data ran');
  await shot('endpoint-sql');

  await page.click('#debug');
  await page.select('#refresh', 'force');
  await page.type('#limit', '2');
  await page.type('#offset', '1');
  await run();
  t.match(
    await inPage(`document.querySelector('#result-meta').textContent`),
    /^2 rows · more rows exist · .*computed now/,
  );
  t.same(
    await inPage<string[]>(
      `[...document.querySelectorAll('#result .table-box tbody tr')].map((tr) => tr.cells[0].textContent)`,
    ),
    api.results.slice(1, 3).map((r) => String(r[0])),
    'limit and offset: the second page of two',
  );
  t.match(await inPage(`document.querySelector('#result details.debug pre').textContent`), /SELECT/);
});

t.test(
  'a trends endpoint: a line per breakdown value over the dates, and its variables as a form',
  async (t) => {
    await openEndpoint('views');
    t.same(
      await inPage<string[]>(
        `[...document.querySelectorAll('[data-variable]')].map((i) => i.dataset.variable)`,
      ),
      ['$browser', 'date_from', 'date_to'],
      'the magic variables, from the OpenAPI description',
    );
    await run();
    const api = await runOk(w, 'views');
    const chart = await drawnChart('trends');
    t.equal(chart.type, 'line');
    t.same(chart.labels, DAYS);
    // Breakdown values by their total, highest first, as the answer has them.
    const expected = [...new Set(api.results.map((r) => String(r[2])))].map((browser) => ({
      label: `$pageview · ${browser}`,
      data: DAYS.map((d) => Number(api.results.find((r) => r[2] === browser && r[3] === d)?.[4])),
    }));
    t.same(chart.datasets, expected, 'one line per breakdown value, the values of the answer');
    t.ok(chart.seriesPixels > 100, `the lines are drawn (${chart.seriesPixels} pixels)`);
    await shot('endpoint-trends');

    await page.type('[data-variable="$browser"]', 'Chrome');
    await page.$eval(
      '[data-variable="date_from"]',
      (el) => ((el as unknown as { value: string }).value = '2026-01-06'),
    );
    await run();
    const chrome = await drawnChart('trends');
    t.same(chrome.labels, DAYS.slice(1), 'date_from as given in the date field');
    t.same(
      chrome.datasets.map((d) => d.label),
      ['$pageview · Chrome'],
      'the breakdown variable',
    );
  },
);

t.test('a funnel endpoint: a bar per step', async (t) => {
  await openEndpoint('signup-to-paid');
  await run();
  const api = await runOk(w, 'signup-to-paid');
  const chart = await drawnChart('funnel');
  t.equal(chart.type, 'bar');
  t.same(chart.labels, ['1. signed up', '2. paid']);
  t.same(chart.datasets, [
    { label: 'Persons', data: api.results.map((r) => Number(r[api.columns.indexOf('count')])) },
  ]);
  t.same(chart.datasets[0]!.data, [4, 4]);
  t.ok(chart.seriesPixels > 500, `the bars are drawn (${chart.seriesPixels} pixels)`);
  await shot('endpoint-funnel');
});

t.test('a retention endpoint: a cohort grid whose cells are the answer', async (t) => {
  await openEndpoint('returning');
  await run();
  const api = await runOk(w, 'returning');
  const col = (name: string): number => api.columns.indexOf(name);
  const grid = await inPage<{ cohort: string; size: string; period: number; count: number; pct: string }[]>(`
    [...document.querySelectorAll('figure[data-chart="retention"] tbody tr')].flatMap((tr) =>
      [...tr.querySelectorAll('td[data-period]')].map((td) => ({
        cohort: tr.dataset.cohort,
        size: tr.querySelector('td.num').textContent,
        period: Number(td.dataset.period),
        count: Number(td.dataset.count),
        pct: td.querySelector('.pct').textContent,
      })))`);
  t.ok(api.results.length >= 4, 'the answer has cohorts');
  const byCell = (x: { cohort: string; period: number }, y: { cohort: string; period: number }): number =>
    x.cohort.localeCompare(y.cohort) || x.period - y.period;
  t.same(
    grid.sort(byCell),
    api.results
      .map((r) => {
        const size = Number(r[col('cohort_size')]);
        const count = Number(r[col('count')]);
        return {
          cohort: String(r[col('cohort_date')]),
          size: String(size),
          period: Number(r[col('period')]),
          count,
          pct: `${((size > 0 ? count / size : 0) * 100).toFixed(1)}%`,
        };
      })
      .sort(byCell),
    'a cell per cohort and period, with its count and share',
  );
  const shaded = await inPage<string[]>(
    `[...document.querySelectorAll('figure[data-chart="retention"] td[data-period]')].map((td) => getComputedStyle(td).backgroundColor)`,
  );
  t.ok(
    shaded.every((c) => /^rgba\(37, 99, 235, 0\.\d+\)$/.test(c)),
    'cells shaded by their share',
  );
  await shot('endpoint-retention');
});

t.test('an ad-hoc query: a table, and bars for a label and a number', async (t) => {
  await page.click('#nav-query');
  await page.waitForSelector('#sql');
  const sql =
    "SELECT properties.$browser AS browser, count() AS views FROM events WHERE event = '$pageview' GROUP BY browser ORDER BY browser";
  await page.$eval('#sql', (el, v) => ((el as unknown as { value: string }).value = v), sql);
  await page.click('#run-query');
  await page.waitForSelector('#result-meta, #result .error');
  const api = await ok(w, sql);
  const chart = await drawnChart('sql');
  t.same(chart.labels, ['Chrome', 'Firefox']);
  t.same(chart.datasets, [{ label: 'views', data: api.results.map((r) => Number(r[1])) }]);
  t.ok(chart.seriesPixels > 500, 'the bars are drawn');
  await shot('query');

  // Three columns: the table alone. Ctrl+Enter runs it.
  await page.$eval('#sql', (el) => ((el as unknown as { value: string }).value = ''));
  await page.type(
    '#sql',
    'SELECT event, distinct_id, timestamp FROM events ORDER BY timestamp, event LIMIT 5',
  );
  await page.keyboard.down('Control');
  await page.keyboard.press('Enter');
  await page.keyboard.up('Control');
  await page.waitForFunction(`document.querySelector('#result-meta')?.textContent.startsWith('5 rows')`);
  t.equal(await inPage(`document.querySelectorAll('#result figure').length`), 0, 'no chart');
  t.equal(await inPage(`document.querySelectorAll('#result .table-box tbody tr').length`), 5);

  // A refused query shows the API's error.
  await page.$eval('#sql', (el) => ((el as unknown as { value: string }).value = 'SELECT nope FROM nowhere'));
  await page.click('#run-query');
  await page.waitForSelector('#result .error');
  t.match(await inPage(`document.querySelector('#result .error').textContent`), /^invalid_query \(query\): /);
  const refusals = problems.errorResponses.splice(0);
  t.equal(refusals.length, 1);
  t.match(refusals[0], /^400 POST .*\/api\/projects\/1\/query\/$/);
  problems.consoleErrors.splice(
    0,
    problems.consoleErrors.length,
    ...problems.consoleErrors.filter((m) => !/400/.test(m)),
  );
});

t.test("capture's counters, read again every few seconds while shown", async (t) => {
  await page.click('#nav-metrics');
  await page.waitForSelector('#metrics .card');
  const accepted = (): Promise<string> =>
    inPage<string>(`document.querySelector('[data-metric="Capture requests/all"] .value').textContent`);
  const before = Number((await accepted()).replace(/,/g, ''));
  t.ok(before >= 1, 'the capture request of the setup is counted');
  t.match(
    await inPage<string>(`document.querySelector('#metrics').innerText`),
    /status 200[\s\S]*accepted: historical[\s\S]*stored: historical/,
  );
  const res = await post(
    `${w.url}/i/v0/e/`,
    JSON.stringify({ api_key: PROJECT_API_KEY, event: 'x', distinct_id: 'z' }),
  );
  t.equal(res.status, 200);
  await page.waitForFunction(
    `Number(document.querySelector('[data-metric="Capture requests/all"] .value').textContent.replace(/,/g, '')) === ${before + 1}`,
    { timeout: 10_000 },
  );
  t.match(
    await inPage(`document.querySelector('[data-metric="Capture requests/all"] .rate').textContent`),
    /\/s$/,
  );
  await shot('metrics');
});

t.test('signing out forgets the key', async (t) => {
  await page.click('#sign-out');
  await page.waitForSelector('#key');
  t.equal(await inPage(`sessionStorage.getItem('weir.personalApiKey')`), null);
});

t.test('nothing went wrong in the page', (t) => {
  t.same(problems.pageErrors, [], 'no uncaught error');
  t.same(problems.consoleErrors, [], 'no console error');
  t.same(problems.failedRequests, [], 'no failed request');
  t.same(problems.errorResponses, [], 'no error answer but the ones provoked');
  t.end();
});
