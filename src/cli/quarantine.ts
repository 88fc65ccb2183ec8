import { parseArgs } from 'node:util';
import type { QuarantineFilter } from '../core/ports.ts';
import { withOperatorStore } from './operator-store.ts';

const USAGE = `usage: weir quarantine list|replay [options]

The rows the store refused and set aside (docs/quarantine.md), on a stopped Weir's data directory or on the
ClickHouse server of WEIR_CLICKHOUSE_URL. A running Weir serves the same through its API:
GET /api/projects/<id>/quarantine/ and POST /api/projects/<id>/quarantine/replay/.

  list      print the rows set aside, one JSON line each (all projects unless --project)
  replay    insert the held rows again, made well formed; print what became of each, one JSON line each

options:
  --data-dir DIR     the data directory (default: WEIR_DATA_DIR, else ./data)
  --project ID       only this project's rows
  --status S         list: held or replayed (default: both)
  --id ID            only this row (repeat for several)
  --limit N          list: at most N rows (default 1000, the most)
`;

/** `weir quarantine list|replay`: exit 0 when done (replay: 1 when a row was refused again), 2 on bad usage. */
export async function runQuarantine(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      'data-dir': { type: 'string' },
      project: { type: 'string' },
      status: { type: 'string' },
      id: { type: 'string', multiple: true },
      limit: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
    strict: true,
  });
  const [action, ...extra] = positionals;
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if ((action !== 'list' && action !== 'replay') || extra.length > 0) return usage('give list or replay');
  const filter: { -readonly [K in keyof QuarantineFilter]: QuarantineFilter[K] } = {};
  if (values.project !== undefined) {
    if (!/^\d{1,15}$/.test(values.project)) return usage('--project is a project id');
    filter.projectId = Number(values.project);
  }
  if (values.status !== undefined) {
    if (action !== 'list') return usage('--status is for list');
    if (values.status !== 'held' && values.status !== 'replayed')
      return usage('--status is held or replayed');
    filter.status = values.status;
  }
  if (values.limit !== undefined) {
    if (action !== 'list') return usage('--limit is for list');
    if (!/^\d{1,4}$/.test(values.limit) || Number(values.limit) < 1) return usage('--limit is 1 to 1000');
    filter.limit = Number(values.limit);
  }
  if (values.id !== undefined) filter.ids = values.id;
  return withOperatorStore(values['data-dir'], async (store) => {
    if (action === 'list') {
      for (const row of await store.listQuarantined(filter)) process.stdout.write(`${JSON.stringify(row)}\n`);
      return 0;
    }
    const results = await store.replayQuarantined(filter);
    for (const r of results) process.stdout.write(`${JSON.stringify(r)}\n`);
    const refused = results.filter((r) => r.result === 'refused').length;
    process.stderr.write(`${results.length - refused} stored, ${refused} refused again\n`);
    return refused > 0 ? 1 : 0;
  });
}

function usage(problem: string): number {
  process.stderr.write(`weir quarantine: ${problem}\n\n${USAGE}`);
  return 2;
}
