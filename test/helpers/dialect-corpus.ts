/**
 * The dialect corpora in test/fixtures/dialect: `valid/*.sql` holds queries each under a `-- name: …` line;
 * `malformed.sql` holds queries each under a `-- error: LINE:COLUMN fragment` line, which says where the
 * parser must point and a piece of what it must say. A query is the text up to the next header line, with
 * trailing blank space trimmed; its line numbers count from the line after its header.
 */
import { readdirSync, readFileSync } from 'node:fs';

const DIR = new URL('../fixtures/dialect/', import.meta.url);

export interface ValidQuery {
  readonly file: string;
  readonly name: string;
  readonly text: string;
}

export interface MalformedQuery {
  readonly text: string;
  readonly line: number;
  readonly column: number;
  readonly message: string;
  /** Where the case is in malformed.sql, for failure messages. */
  readonly fileLine: number;
}

interface Block {
  header: string;
  text: string;
  fileLine: number;
}

function blocks(text: string, header: RegExp): Block[] {
  const out: Block[] = [];
  const lines = text.split('\n');
  let current: Block | null = null;
  let body: string[] = [];
  const flush = (): void => {
    if (current) out.push({ ...current, text: body.join('\n').trimEnd() });
  };
  lines.forEach((line, i) => {
    const m = header.exec(line);
    if (m) {
      flush();
      current = { header: m[1]!, text: '', fileLine: i + 1 };
      body = [];
    } else if (current) {
      body.push(line);
    }
  });
  flush();
  return out;
}

export function loadValidCorpus(): ValidQuery[] {
  const files = readdirSync(new URL('valid/', DIR))
    .filter((f) => f.endsWith('.sql'))
    .sort();
  return files.flatMap((file) =>
    blocks(readFileSync(new URL(`valid/${file}`, DIR), 'utf8'), /^-- name: (.+)$/).map((b) => ({
      file,
      name: b.header,
      text: b.text,
    })),
  );
}

export function loadMalformedCorpus(): MalformedQuery[] {
  return blocks(readFileSync(new URL('malformed.sql', DIR), 'utf8'), /^-- error: (.+)$/).map((b) => {
    const m = /^(\d+):(\d+) (.+)$/.exec(b.header);
    if (!m) throw new Error(`malformed.sql:${b.fileLine}: header must be "-- error: LINE:COLUMN fragment"`);
    return { text: b.text, line: Number(m[1]), column: Number(m[2]), message: m[3]!, fileLine: b.fileLine };
  });
}

/** Sample values for every variable the valid corpus uses (for inlining, and for ClickHouse's own parser). */
export const SAMPLE_VARIABLES: Readonly<Record<string, string | number | string[]>> = {
  browser: 'Chrome',
  browsers: ['Chrome', 'Firefox'],
  cohort_start: '2026-01-05',
  date_from: '2026-01-01',
  date_to: '2026-01-31',
  days: 30,
  distinct_id: 'user-1',
  email_pattern: '%@example.com',
  emails: ['a@example.com', 'b@example.com'],
  event: '$pageview',
  event_name: 'user signed up',
  flag: 'new-onboarding',
  label: "it's a label",
  limit: 100,
  min_count: 10,
  n: 15,
  offset: 20,
  path: '/pricing',
  person: '0190b4a6-1234-7000-8000-000000000001',
  plan: 'pro',
  property: '$browser',
  return_event: '$pageview',
  since: '2026-01-01 00:00:00',
  start_event: 'user signed up',
  step_1: '$pageview',
  step_2: 'checkout started',
  step_3: 'order completed',
  tz: 'Europe/Paris',
  window_seconds: 86400,
};
