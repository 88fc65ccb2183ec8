/** A `weir start` in this process on the server store: a database of its own on a ClickHouse, dropped after. */
import { createClient } from '@clickhouse/client';
import type { Test } from 'tap';
import { serverAccess, type ClickHouseForTest } from '../clickhouse-front/start.ts';
import { startTestWeir, type TestWeir } from './weir.ts';

export async function startServerWeir(
  t: Test,
  ch: ClickHouseForTest,
  name: string,
  env: Record<string, string> = {},
): Promise<TestWeir> {
  const { url, user, password } = serverAccess(ch);
  const database = `weir_${name}_${process.pid}`;
  const w = await startTestWeir({
    ...env,
    WEIR_CLICKHOUSE_URL: url,
    WEIR_CLICKHOUSE_USER: user,
    ...(password === undefined ? {} : { WEIR_CLICKHOUSE_PASSWORD: password }),
    WEIR_CLICKHOUSE_DATABASE: database,
  });
  t.teardown(async () => {
    await w.close();
    const admin = createClient({ url: ch.url, password: ch.password ?? '' });
    await admin.command({ query: `DROP DATABASE IF EXISTS \`${database}\`` });
    await admin.close();
  });
  return w;
}
