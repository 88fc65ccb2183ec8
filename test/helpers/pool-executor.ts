/**
 * An executor for the query pool's own tests, loaded in the actor threads in place of the rewrite's
 * (`executorModule`): the pool never looks inside a plan, so its tests use plans of their own that select
 * rows, crash the thread, throw, or measure the thread's memory.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Table } from 'apache-arrow';
import { wasmMemory } from 'parquet-wasm';
import { AppError } from '../../src/errors/app-error.ts';
import type { ParamValue } from '../../src/query/clickhouse/variables.ts';
import { arrowSize } from '../../src/query/materialize/pool/parquet-table.ts';
import type { RunAnswer, RunPage } from '../../src/query/materialize/pool/protocol.ts';

export type TestPlan =
  /** The rows whose `column` equals the variable `value` (every row when there is no column), paged. */
  | { readonly op: 'rows'; readonly column?: string }
  /** Ends the thread mid-run, as a crash would. */
  | { readonly op: 'crash' }
  /** Ends the thread the first time only: the first run to find no file at `marker` makes it and crashes. */
  | { readonly op: 'crash-once'; readonly marker: string }
  | { readonly op: 'throw' }
  /** The thread's memory after a full collection, and the table's Arrow size. */
  | { readonly op: 'memory' };

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

export function executeServing(
  table: Table,
  plan: TestPlan,
  variables: Record<string, ParamValue>,
  page: RunPage,
): RunAnswer {
  switch (plan.op) {
    case 'crash':
      process.exit(3);
    // falls through (never: process.exit does not return)
    case 'crash-once':
      if (!existsSync(plan.marker)) {
        writeFileSync(plan.marker, '');
        process.exit(3);
      }
      return rows(table, {}, variables, page);
    case 'throw':
      throw new AppError('invalid_variable', { detail: 'value is not a value', attr: 'value' });
    case 'memory': {
      gc();
      gc();
      const m = process.memoryUsage();
      return {
        columns: ['heapUsed', 'external', 'arrayBuffers', 'wasm', 'arrowSize', 'rows'],
        types: ['UInt64', 'UInt64', 'UInt64', 'UInt64', 'UInt64', 'UInt64'],
        rows: [[m.heapUsed, m.external, m.arrayBuffers, wasmBytes(), arrowSize(table), table.numRows]],
        hasMore: false,
      };
    }
    case 'rows':
      return rows(table, plan, variables, page);
  }
}

/** parquet-wasm's WebAssembly memory: it grows to the largest decode and never shrinks. */
function wasmBytes(): number {
  return (wasmMemory() as unknown as { buffer: ArrayBuffer }).buffer.byteLength;
}

function rows(
  table: Table,
  plan: { readonly column?: string },
  variables: Record<string, ParamValue>,
  page: RunPage,
): RunAnswer {
  const fields = table.schema.fields;
  const vectors = fields.map((_, i) => table.getChildAt(i)!);
  const filterAt = plan.column === undefined ? -1 : fields.findIndex((f) => f.name === plan.column);
  const out: unknown[][] = [];
  for (let r = 0; r < table.numRows; r++) {
    if (filterAt >= 0 && vectors[filterAt]!.get(r) !== variables['value']) continue;
    out.push(vectors.map((v) => v.get(r) as unknown));
  }
  const offset = page.offset ?? 0;
  const limit = page.limit ?? out.length;
  return {
    columns: fields.map((f) => f.name),
    types: fields.map((f) => String(f.type)),
    rows: out.slice(offset, offset + limit),
    hasMore: offset + limit < out.length,
  };
}
