/**
 * The real posthog-js, as a new user would first try it: its own bundle in headless Chromium, on a page of
 * another origin than Weir, initialised with only the project key and `api_host`. Nothing may go wrong that
 * a person would see in the developer tools (console errors, CORS refusals, failed requests, error
 * answers); its events must be stored; and after `identify` the anonymous and the identified id must be
 * one person.
 */
import { createReadStream } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import t from 'tap';
import type { Browser, Page } from 'puppeteer-core';
import { launchBrowser, watchPage, type PageProblems } from '../helpers/browser.ts';
import { PROJECT_API_KEY, startTestWeir, waitFor, type TestWeir } from '../helpers/weir.ts';

const DIST = join(dirname(createRequire(import.meta.url).resolve('posthog-js/package.json')), 'dist');
/** The bundles a site loads: the one with every extension, and the one that loads them when needed. */
const BUNDLES = ['array.full.js', 'array.js'];

const w = await startTestWeir();
t.teardown(() => w.close());
const site = await startSite(w.url);
t.teardown(() => new Promise<void>((resolve) => site.server.close(() => resolve())));
const browser = await launchBrowser();
t.teardown(() => browser.close());

/** The page of a site that loads posthog-js and initialises it as PostHog's docs show, nothing more. */
function pageHtml(bundle: string, weirUrl: string): string {
  return `<!doctype html>
<html>
  <head>
    <meta charset="utf-8" />
    <title>A site with posthog-js</title>
    <link rel="icon" href="data:," />
    <script src="/posthog/${bundle}"></script>
    <script>
      posthog.init(${JSON.stringify(PROJECT_API_KEY)}, { api_host: ${JSON.stringify(weirUrl)} });
    </script>
  </head>
  <body>
    <button id="buy" class="primary">Buy now</button>
  </body>
</html>`;
}

/** The site on a loopback port of its own (another origin than Weir's): the page and posthog-js's files. */
async function startSite(weirUrl: string): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://site').pathname;
    const bundle = /^\/page\/([\w.-]+)$/.exec(path)?.[1];
    if (bundle !== undefined && BUNDLES.includes(bundle)) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(pageHtml(bundle, weirUrl));
      return;
    }
    const file = /^\/posthog\/([\w.-]+\.js)$/.exec(path)?.[1];
    if (file) {
      res.writeHead(200, { 'content-type': 'application/javascript' });
      createReadStream(join(DIST, file))
        .on('error', () => res.destroy())
        .pipe(res);
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the site has no port');
  return { server, url: `http://127.0.0.1:${address.port}` };
}

/**
 * A page that presents as the browser of a person: posthog-js drops the events of an automated browser by
 * default (a `HeadlessChrome` user agent or brand, `navigator.webdriver`), and a site's visitors are none.
 * Nothing of posthog-js's own configuration changes.
 */
async function openPage(b: Browser): Promise<Page> {
  // A context of its own: no cookie or storage of an earlier test (posthog-js keeps its ids there).
  const context = await b.createBrowserContext();
  const page = await context.newPage();
  const userAgent = (await b.userAgent()).replace('HeadlessChrome', 'Chrome');
  const major = /Chrome\/(\d+)/.exec(userAgent)?.[1] ?? '130';
  await page.setUserAgent({
    userAgent,
    userAgentMetadata: {
      brands: [
        { brand: 'Chromium', version: major },
        { brand: 'Not.A/Brand', version: '99' },
      ],
      platform: 'Linux',
      platformVersion: '',
      architecture: 'x86',
      model: '',
      mobile: false,
    },
  });
  await page.evaluateOnNewDocument(
    "Object.defineProperty(Navigator.prototype, 'webdriver', { get: () => false, configurable: true })",
  );
  return page;
}

interface StoredEvent {
  event: string;
  distinct_id: string;
  properties: string;
}

function eventsOf(weir: TestWeir, ids: readonly string[]): Promise<StoredEvent[]> {
  return weir.rows<StoredEvent>(
    `SELECT event, distinct_id, properties FROM events WHERE distinct_id IN {ids:Array(String)} ORDER BY timestamp`,
    { ids },
  );
}

function problemsText(p: PageProblems): string {
  return JSON.stringify(p, null, 2);
}

for (const bundle of BUNDLES) {
  t.test(`posthog-js (${bundle}) with the default configuration`, async (t) => {
    const page = await openPage(browser);
    t.teardown(() => page.browserContext().close());
    const problems = watchPage(page);
    const weirCalls: string[] = [];
    page.on('response', (r) => {
      if (r.url().startsWith(w.url)) weirCalls.push(`${r.status()} ${r.request().method()} ${r.url()}`);
    });

    await page.goto(`${site.url}/page/${bundle}`, { waitUntil: 'load' });
    await page.waitForFunction('window.posthog && window.posthog.__loaded === true', { timeout: 15_000 });
    const anonymous = (await page.evaluate('posthog.get_distinct_id()')) as string;
    t.match(anonymous, /\S/, 'an anonymous distinct id');

    await page.evaluate(`posthog.capture('signed up', { plan: 'pro', bundle: ${JSON.stringify(bundle)} })`);
    await page.click('#buy');
    const user = `js-user-${bundle}`;
    await page.evaluate(`posthog.identify(${JSON.stringify(user)}, { email: 'someone@example.com' })`);
    await page.evaluate(`posthog.capture('paid', { amount: 12 })`);

    const expected = ['$pageview', 'signed up', '$autocapture', '$identify', 'paid'];
    let stored: StoredEvent[] = [];
    const events = await waitFor(
      async () => {
        stored = await eventsOf(w, [anonymous, user]);
        const names = new Set(stored.map((r) => r.event));
        return expected.every((e) => names.has(e)) ? stored : undefined;
      },
      30_000,
      'the page’s events to be stored',
    ).catch((err: unknown) => {
      // What did happen, to say why: the events stored, the calls to Weir, the page's problems.
      const seen = stored.map((r) => `${r.event} ${r.distinct_id}`).join('\n');
      throw new Error(
        `${String(err)}\nstored:\n${seen}\ncalls to Weir:\n${weirCalls.join('\n')}\n${problemsText(problems)}`,
      );
    });
    const byName = new Map(events.map((e) => [e.event, e]));
    t.equal(byName.get('signed up')?.distinct_id, anonymous, 'before identify: the anonymous id');
    t.equal(byName.get('paid')?.distinct_id, user, 'after identify: the identified id');
    const identify = JSON.parse(byName.get('$identify')!.properties) as Record<string, unknown>;
    t.equal(identify['$anon_distinct_id'], anonymous, '$identify names the anonymous id');
    const autocapture = JSON.parse(byName.get('$autocapture')!.properties) as Record<string, unknown>;
    t.match(autocapture['$elements_chain'], /button/, 'autocapture sends its elements chain as text');

    const persons = await waitFor(
      async () => {
        const rows = await w.rows<{ distinct_id: string; person_id: string }>(
          `SELECT distinct_id, toString(person_id) AS person_id FROM person_distinct_ids FINAL
           WHERE is_deleted = 0 AND distinct_id IN {ids:Array(String)}`,
          { ids: [anonymous, user] },
        );
        return rows.length === 2 ? rows : undefined;
      },
      10_000,
      'both ids to have a person',
    );
    t.equal(
      persons[0]!.person_id,
      persons[1]!.person_id,
      'the anonymous and the identified id are one person',
    );

    // Whatever posthog-js still does after its first calls (a late flags or config request) has answered.
    await page.waitForNetworkIdle({ idleTime: 500, timeout: 15_000 });
    t.comment(`calls to Weir:\n${[...new Set(weirCalls)].join('\n')}`);
    t.ok(
      weirCalls.some((c) => c.startsWith('200 GET') && c.includes(`/array/${PROJECT_API_KEY}/config`)),
      'the remote config was loaded from Weir',
    );
    t.same(problems.consoleErrors, [], `no console errors\n${problemsText(problems)}`);
    t.same(problems.pageErrors, [], 'no uncaught exceptions');
    t.same(problems.failedRequests, [], 'no failed requests (a CORS refusal is one)');
    t.same(problems.errorResponses, [], 'no error answers');
  });
}

t.test('control: the watch sees a CORS refusal (an operations route has no CORS headers)', async (t) => {
  const page = await openPage(browser);
  t.teardown(() => page.browserContext().close());
  const problems = watchPage(page);
  await page.goto(`${site.url}/page/array.full.js`, { waitUntil: 'load' });
  const outcome = await page.evaluate(
    `fetch(${JSON.stringify(`${w.url}/_health`)}).then(() => 'read', (err) => 'refused: ' + err.message)`,
  );
  t.match(outcome, /^refused/, 'the page cannot read the answer');
  await waitFor(
    () => Promise.resolve(problems.consoleErrors.some((e) => /CORS/.test(e)) ? true : undefined),
    5_000,
    'the CORS console error',
  );
  t.ok(
    problems.failedRequests.some((r) => r.includes('/_health')),
    'and a failed request',
  );
});
