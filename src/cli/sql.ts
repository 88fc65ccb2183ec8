import { withOperatorStore } from './operator-store.ts';

/**
 * `weir sql`: an operator's tool that runs ClickHouse SQL directly on the store and prints each row as a JSON
 * line (see withOperatorStore for which store).
 */
export async function runSql(flags: Record<string, string | undefined>, sql: string): Promise<number> {
  for (const [name, value] of Object.entries(flags)) {
    if (name !== 'data-dir' && value !== undefined) throw new Error(`sql does not take --${name}`);
  }
  return withOperatorStore(flags['data-dir'], async (store) => {
    const rows = await store.query(sql);
    const out = rows.map((r) => JSON.stringify(r)).join('\n');
    if (out) process.stdout.write(`${out}\n`);
    return 0;
  });
}
