/**
 * A real headless Chromium for the suite, driven by puppeteer-core: Debian's `chromium` (the README's test
 * command and .ci/run install it), or the browser `WEIR_TEST_CHROMIUM` names. Missing, the tests that need it
 * fail and say how to install it, rather than pass without having run.
 */
import { existsSync } from 'node:fs';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

/** The browser executable the tests run, or undefined when none is installed. */
export function chromiumPath(): string | undefined {
  const named = process.env['WEIR_TEST_CHROMIUM'];
  if (named) return named;
  return CANDIDATES.find((p) => existsSync(p));
}

export async function launchBrowser(): Promise<Browser> {
  const executablePath = chromiumPath();
  if (executablePath === undefined) {
    throw new Error(
      "No Chromium for the browser tests: install Debian's (`apt-get install -y chromium`) or set WEIR_TEST_CHROMIUM",
    );
  }
  return puppeteer.launch({
    executablePath,
    headless: true,
    // --no-sandbox: the suite may run as root (CI), where Chromium refuses its sandbox. The page is our own.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--no-first-run',
      '--no-default-browser-check',
      '--disable-extensions',
      '--disable-background-networking',
      '--disable-component-update',
    ],
  });
}

/** What went wrong on a page while it was watched: what a person would see in the developer tools. */
export interface PageProblems {
  /** `console.error` messages, including the browser's own (CORS refusals, failed loads). */
  readonly consoleErrors: string[];
  /** Uncaught exceptions of the page's scripts. */
  readonly pageErrors: string[];
  /** Requests that got no answer at all (refused, aborted, blocked), with their URL. */
  readonly failedRequests: string[];
  /** Answers with a status of 400 or more, as `STATUS METHOD URL`. */
  readonly errorResponses: string[];
}

/** Starts collecting a page's problems; read them from the returned object at any time. */
export function watchPage(page: Page): PageProblems {
  const problems: PageProblems = {
    consoleErrors: [],
    pageErrors: [],
    failedRequests: [],
    errorResponses: [],
  };
  page.on('console', (m) => {
    if (m.type() === 'error') {
      const where = m.location()?.url;
      problems.consoleErrors.push(where ? `${m.text()} (${where})` : m.text());
    }
  });
  page.on('pageerror', (err) => problems.pageErrors.push(String(err instanceof Error ? err.stack : err)));
  page.on('requestfailed', (r) =>
    problems.failedRequests.push(`${r.method()} ${r.url()}: ${r.failure()?.errorText ?? 'failed'}`),
  );
  page.on('response', (r) => {
    if (r.status() >= 400) problems.errorResponses.push(`${r.status()} ${r.request().method()} ${r.url()}`);
  });
  return problems;
}
