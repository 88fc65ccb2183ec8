import type { Bootstrap } from '../catalog/file-catalog.ts';
import type { Config } from '../config/config.ts';

/**
 * Tells the person starting Weir where it listens, and on a first start the keys it made (shown only then).
 * `captureUrl` is where SDKs send events: this process, or (for `weir ingest`) the `weir capture` processes.
 */
export function announce(
  what: string,
  url: string,
  /** Where its state is, as a phrase: `data in ./data`. */
  place: string,
  boot: Bootstrap | undefined,
  captureUrl: string = `${url}   (point a PostHog SDK's host here)`,
): void {
  if (boot) {
    const lines = [
      'Weir created project 1 on this first start. Keep these; they are shown only now.',
      `  capture URL:          ${captureUrl}`,
      `  project API key:      ${boot.projectKeyFromEnv ? '(from WEIR_BOOTSTRAP_PROJECT_API_KEY)' : boot.project.apiToken}`,
      `  personal API key:     ${boot.personalApiKey ?? '(from WEIR_BOOTSTRAP_PERSONAL_API_KEY)'}`,
    ];
    process.stderr.write(`\n${lines.join('\n')}\n\n`);
  }
  process.stderr.write(`${what} is listening on ${url} (${place})\n`);
}

/** Where a process's data is, as `announce` says it: the data directory, or the ClickHouse server's database. */
export function storePlace(config: Config): string {
  return config.clickhouseUrl === undefined
    ? `data in ${config.dataDir}`
    : `store in ClickHouse at ${config.clickhouseUrl} (database ${config.clickhouseDatabase})`;
}
