/**
 * A refresh against the direct query it replaces. A refresh is timed as a user sees it: from
 * `POST …/materialize` until GET shows a new completed result (polled every 10 ms), so it includes the
 * scheduler's pick-up, the engine's query, the Parquet write, the object put and the catalog update. The
 * direct query is the same SQL run as a direct endpoint run (`refresh: "direct"`, one caller) with the values
 * that read the most (WIDEST: the commonest event over all the data; the refresh reads all of it). The two
 * are alternated, `rounds` each, and compared by their medians.
 */
import { WIDEST, type BenchClient } from './endpoint.ts';

export interface RefreshResult {
  /** The first refresh, from the create's answer to completed (cold: nothing read before). */
  readonly firstMs: number;
  readonly refreshMs: number[];
  readonly directMs: number[];
  readonly refreshMedianMs: number;
  readonly directMedianMs: number;
  /** Rows and Parquet bytes of the stored result. */
  readonly rows: number | null;
  readonly bytes: number | null;
}

export async function measureRefresh(
  client: BenchClient,
  firstMs: number,
  rounds: number,
  timeoutMs: number,
): Promise<RefreshResult> {
  const refreshMs: number[] = [];
  const directMs: number[] = [];
  let state = await client.state();
  for (let i = 0; i < rounds; i++) {
    let t = performance.now();
    const answer = await client.run(WIDEST, 'direct');
    directMs.push(performance.now() - t);
    if (answer.endpoint_materialized) throw new Error('a direct run was answered from the materialization');
    t = performance.now();
    await client.materialize();
    state = await client.completed(state.materialization.last_materialized_at, timeoutMs);
    refreshMs.push(performance.now() - t);
  }
  return {
    firstMs,
    refreshMs,
    directMs,
    refreshMedianMs: median(refreshMs),
    directMedianMs: median(directMs),
    rows: state.materialization.rows,
    bytes: state.materialization.bytes,
  };
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
