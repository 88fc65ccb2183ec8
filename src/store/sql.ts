/**
 * SQL text and settings both store adapters write the same way: the embedded one to chDB in-process, the
 * server one to ClickHouse over HTTP. Nothing here loads an engine.
 */

/** A ClickHouse string literal. */
export function sqlString(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** ` (a, b, …)` for the columns of rows given as values; nothing for rows given as objects. */
export function columnList(columns: readonly string[] | undefined): string {
  return columns ? ` (${columns.map((c) => `\`${c}\``).join(', ')})` : '';
}

/**
 * Settings of every insert. Rows reach the store already deduplicated by uuid; re-sorting and collapsing each
 * block costs a good share of a small insert, and merges (or FINAL) still collapse replaced versions. A JSON
 * object given for a String column is stored as its JSON text: a row may carry `properties` as an object, so
 * it is serialised once, with the row, rather than once alone and again escaped inside the row.
 */
export const INSERT_SETTINGS = {
  optimize_on_insert: 0,
  input_format_json_read_objects_as_strings: 1,
} as const;

/**
 * Parameters with each whole number beyond ±2^53 (a variable's 1e20) as a bigint of the same value. chDB's
 * client refuses such a number (it cannot tell one that lost digits on the way), though the engine reads it
 * well: as a bigint it is written digit for digit, the exact value of the double, by either client.
 */
export function exactIntegers(params: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(params)) {
    const exact = exactInteger(v);
    if (exact !== v) (out ??= { ...params })[k] = exact;
  }
  return out ?? params;
}

function exactInteger(value: unknown): unknown {
  if (typeof value === 'number')
    return Number.isSafeInteger(value) || !Number.isInteger(value) ? value : BigInt(value);
  return Array.isArray(value) && value.some((v) => exactInteger(v) !== v) ? value.map(exactInteger) : value;
}

/**
 * ClickHouse's lightweight delete of the rows `where` selects, waited for: the rows are masked for every read
 * at once, and gone from disk once merges rewrite their parts (docs/operations.md, "Erasure").
 */
export function deleteStatement(table: string, where: string, onCluster = '', wait = true): string {
  return `DELETE FROM \`${table}\`${onCluster} WHERE ${where} SETTINGS lightweight_deletes_sync = ${wait ? 2 : 0}`;
}

/**
 * The rewrite of the parts that hold lightweight-deleted rows, waited for: their bytes are then in no active
 * part (the replaced parts leave the disk at the engine's next cleanup, not at once). Parts without such rows
 * are only relinked, so it is safe to run again, and with nothing to apply.
 */
export function purgeStatement(table: string, onCluster = '', wait = true): string {
  return `ALTER TABLE \`${table}\`${onCluster} APPLY DELETED MASK SETTINGS mutations_sync = ${wait ? 2 : 0}`;
}
