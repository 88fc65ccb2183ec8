/**
 * Before anything is timed: the materialized answer (`refresh: "force"`, which skips the cache but not the
 * materialization) must equal the direct one (`refresh: "direct"`, the raw events) for each checked value,
 * and each must say where it came from. A benchmark of fast wrong answers would measure nothing.
 */
import { CHECKED, type BenchClient } from './endpoint.ts';

export interface EqualityCheck {
  readonly variables: { readonly event: string; readonly since: string };
  readonly rows: number;
}

export async function checkEquality(client: BenchClient): Promise<EqualityCheck[]> {
  const checks: EqualityCheck[] = [];
  for (const variables of CHECKED) {
    const direct = await client.run(variables, 'direct');
    const materialized = await client.run(variables, 'force');
    const where = JSON.stringify(variables);
    if (direct.endpoint_materialized)
      throw new Error(`${where}: a direct run says it was answered from the materialization`);
    if (!materialized.endpoint_materialized)
      throw new Error(`${where}: a forced run was not answered from the materialization`);
    for (const field of ['columns', 'types', 'results'] as const) {
      const a = JSON.stringify(direct[field]);
      const b = JSON.stringify(materialized[field]);
      if (a !== b) throw new Error(`${where}: ${field} differ\n  direct:       ${a}\n  materialized: ${b}`);
    }
    checks.push({ variables, rows: direct.results.length });
  }
  return checks;
}
