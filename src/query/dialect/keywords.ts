import type { IntervalUnit } from './ast.ts';

/**
 * Where words are reserved. ClickHouse keywords are case-insensitive and reserved only where they would be
 * ambiguous, so columns called `date`, `event` or `timestamp` need no quotes; these sets say where a word
 * stops being a name. A quoted identifier is never a keyword.
 */

const words = (list: string): ReadonlySet<string> => new Set(list.split(/\s+/).filter(Boolean));

/** Words that cannot start an expression: the clause and operator words that end one. */
export const NOT_AN_EXPRESSION = words(`
  SELECT WITH FROM WHERE PREWHERE GROUP HAVING ORDER LIMIT OFFSET UNION INTERSECT EXCEPT WINDOW QUALIFY
  SETTINGS FORMAT INTO AS ON USING JOIN THEN ELSE END WHEN DISTINCT BY ASC DESC OVER BETWEEN IS
  AND OR IN LIKE ILIKE
`);

/** Words of NOT_AN_EXPRESSION that are also functions, so that `and(a, b)` and `format('{}', x)` still call. */
export const FUNCTION_WORDS = words('AND OR IN LIKE ILIKE FORMAT');

/** Words that cannot be a bare alias (`SELECT count() c`, `FROM events e`): they start what comes next. */
export const NOT_AN_ALIAS = words(`
  FROM WHERE PREWHERE GROUP HAVING ORDER LIMIT OFFSET UNION INTERSECT EXCEPT WINDOW QUALIFY SETTINGS FORMAT
  INTO AS ON USING JOIN INNER LEFT RIGHT FULL CROSS OUTER ARRAY GLOBAL ANY ALL ASOF SEMI ANTI PASTE FINAL
  SAMPLE AND OR NOT IS IN LIKE ILIKE BETWEEN DIV MOD ASC DESC ASCENDING DESCENDING NULLS COLLATE WITH BY
  OVER THEN ELSE END WHEN SELECT PRECEDING FOLLOWING ROWS RANGE REGEXP
`);

/** Words that begin a join (`LEFT JOIN`, `ANY LEFT JOIN`, `CROSS JOIN`, `LEFT ARRAY JOIN`, …). */
export const JOIN_WORDS = words(
  'JOIN INNER LEFT RIGHT FULL CROSS OUTER ANY ALL ASOF SEMI ANTI GLOBAL PASTE ARRAY',
);

/** Words with their own syntax where an expression starts. */
export const EXPRESSION_WORDS = words('NULL TRUE FALSE INF NAN CASE CAST INTERVAL NOT');

/** A printer quotes a name that is one of these, so that it reads back as a name. */
export const QUOTE_IF = new Set([...NOT_AN_EXPRESSION, ...NOT_AN_ALIAS, ...EXPRESSION_WORDS]);

/** Interval units, singular and plural, to the unit's name in the AST. */
export const INTERVAL_UNITS: ReadonlyMap<string, IntervalUnit> = new Map(
  (
    [
      'nanosecond',
      'microsecond',
      'millisecond',
      'second',
      'minute',
      'hour',
      'day',
      'week',
      'month',
      'quarter',
      'year',
    ] as const
  ).flatMap((unit): [string, IntervalUnit][] => [
    [unit.toUpperCase(), unit],
    [`${unit.toUpperCase()}S`, unit],
  ]),
);
