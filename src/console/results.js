// A result (`{results, columns, types, …}`, as runs and the query API answer) as a table, and as the chart
// that suits it: a line per series and breakdown value for a trend by date, bars per step for a funnel, a
// cohort grid for retention, bars for SQL with a label column and a number column; else the table alone.

import { chartsAvailable, drawChart } from './charts.js';
import { formatNumber, h } from './dom.js';

/** Rows shown in a table; the rest are counted, not drawn (a page of 50,000 rows would stall the tab). */
const MAX_TABLE_ROWS = 1000;
/** More bars than this are no chart to read. */
const MAX_BARS = 500;

/**
 * Appends the chart (if one suits), the table and, for a debug run, the query as it ran, to `parent` (in the
 * page). `kind` is the query's kind: an insight's, or `HogQLQuery` for SQL.
 */
export function renderResult(parent, result, kind, charts) {
  const spec = chartSpec(kind, result);
  if (spec?.type === 'retention') parent.append(retentionGrid(result));
  else if (spec && chartsAvailable()) drawChart(parent, spec, charts);
  parent.append(resultTable(result));
  if (result.hogql !== undefined || result.clickhouse !== undefined) parent.append(debugDetails(result));
}

/** Which chart a result gets, with its data; null for none. */
export function chartSpec(kind, result) {
  if (!Array.isArray(result.results) || result.results.length === 0) return null;
  if (kind === 'TrendsQuery') return trendsSpec(result);
  if (kind === 'FunnelsQuery') return funnelSpec(result);
  if (kind === 'RetentionQuery')
    return ['cohort_date', 'cohort_size', 'period', 'count'].every((c) => result.columns.includes(c))
      ? { type: 'retention' }
      : null;
  return sqlSpec(result);
}

function trendsSpec(result) {
  const [si, s, b, d, v] = ['series_index', 'series', 'breakdown_value', 'date', 'value'].map((c) =>
    result.columns.indexOf(c),
  );
  if (s < 0 || v < 0) return null;
  // One line per series and breakdown value, in the answer's order (breakdown values by their total).
  const groups = new Map();
  for (const row of result.results) {
    const key = JSON.stringify([si < 0 ? row[s] : row[si], b < 0 ? null : row[b]]);
    let group = groups.get(key);
    if (!group) {
      const label = b < 0 ? String(row[s]) : `${row[s]} · ${valueLabel(row[b])}`;
      group = { label, points: new Map(), total: 0 };
      groups.set(key, group);
    }
    const value = Number(row[v]);
    if (d >= 0) group.points.set(row[d], value);
    group.total += value;
  }
  if (d < 0) {
    // A total-value display (no dates): one bar per series and breakdown value.
    const all = [...groups.values()];
    return {
      kind: 'trends',
      type: 'bar',
      title: 'Trend totals',
      labels: all.map((g) => g.label),
      datasets: [{ label: 'value', data: all.map((g) => g.total) }],
    };
  }
  const dates = [...new Set(result.results.map((row) => row[d]))].sort();
  return {
    kind: 'trends',
    type: 'line',
    title: 'Trend by date',
    labels: dates,
    datasets: [...groups.values()].map((g) => ({
      label: g.label,
      data: dates.map((date) => g.points.get(date) ?? 0),
    })),
  };
}

function funnelSpec(result) {
  const [b, st, e, c, r] = ['breakdown_value', 'step', 'event', 'count', 'conversion_rate'].map((col) =>
    result.columns.indexOf(col),
  );
  if (st < 0 || c < 0) return null;
  const steps = new Map();
  const groups = new Map();
  for (const row of result.results) {
    const step = Number(row[st]);
    if (!steps.has(step)) steps.set(step, e < 0 ? `Step ${step}` : `${step}. ${valueLabel(row[e])}`);
    const key = b < 0 ? 'Persons' : valueLabel(row[b]);
    let group = groups.get(key);
    if (!group) groups.set(key, (group = { counts: new Map(), rates: new Map() }));
    group.counts.set(step, Number(row[c]));
    if (r >= 0) group.rates.set(step, Number(row[r]));
  }
  const order = [...steps.keys()].sort((x, y) => x - y);
  const all = [...groups.entries()];
  return {
    kind: 'funnel',
    type: 'bar',
    title: 'Funnel steps',
    labels: order.map((s) => steps.get(s)),
    datasets: all.map(([label, g]) => ({ label, data: order.map((s) => g.counts.get(s) ?? 0) })),
    tooltip:
      r < 0
        ? undefined
        : (ctx) => {
            const rate = all[ctx.datasetIndex]?.[1].rates.get(order[ctx.dataIndex]);
            return rate === undefined ? '' : `${(rate * 100).toFixed(1)}% of step 1`;
          },
  };
}

function sqlSpec(result) {
  const { columns, results: rows } = result;
  if (columns.length !== 2 || rows.length > MAX_BARS) return null;
  const numeric = [0, 1].map((i) => isNumericColumn(result, i));
  // The number is the numeric column; with two, the second (the first then labels it, e.g. an hour).
  const value = numeric[1] ? 1 : numeric[0] ? 0 : -1;
  if (value < 0) return null;
  const label = 1 - value;
  return {
    kind: 'sql',
    type: 'bar',
    title: `${columns[value]} by ${columns[label]}`,
    labels: rows.map((row) => valueLabel(row[label])),
    datasets: [{ label: String(columns[value]), data: rows.map((row) => Number(row[value])) }],
  };
}

/** A ClickHouse number type (64-bit integers may come as strings; the type still says number). */
function isNumericType(type) {
  const bare = String(type).replace(/^(?:Nullable|LowCardinality)\(|\)$/g, '');
  return /^(?:U?Int\d+|Float\d+|Decimal)/.test(bare);
}

function isNumericColumn(result, i) {
  const type = result.types?.[i];
  if (type !== undefined) return isNumericType(type);
  return result.results.every((row) => row[i] === null || typeof row[i] === 'number');
}

function valueLabel(value) {
  if (value === null || value === undefined) return '(none)';
  if (value === '') return '(empty)';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** Retention as a cohort grid: a row per cohort (and breakdown value), a cell per period, shaded by its share. */
export function retentionGrid(result) {
  const col = (name) => result.columns.indexOf(name);
  const [b, cd, cs, p, c] = [
    col('breakdown_value'),
    col('cohort_date'),
    col('cohort_size'),
    col('period'),
    col('count'),
  ];
  const cohorts = new Map();
  let periods = 0;
  for (const row of result.results) {
    const key = JSON.stringify([b < 0 ? null : row[b], row[cd]]);
    let cohort = cohorts.get(key);
    if (!cohort) {
      cohort = { breakdown: b < 0 ? undefined : row[b], date: row[cd], size: Number(row[cs]), counts: [] };
      cohorts.set(key, cohort);
    }
    const period = Number(row[p]);
    cohort.counts[period] = Number(row[c]);
    periods = Math.max(periods, period + 1);
  }
  const head = h(
    'tr',
    null,
    b < 0 ? null : h('th', null, 'Breakdown'),
    h('th', null, 'Cohort'),
    h('th', null, 'Persons'),
    Array.from({ length: periods }, (_, i) => h('th', null, `Period ${i}`)),
  );
  const body = [...cohorts.values()].map((cohort) =>
    h(
      'tr',
      { dataset: { cohort: String(cohort.date) } },
      b < 0 ? null : h('th', { scope: 'row' }, valueLabel(cohort.breakdown)),
      h('th', { scope: 'row' }, String(cohort.date)),
      h('td', { class: 'num' }, formatNumber(cohort.size)),
      Array.from({ length: periods }, (_, period) => retentionCell(cohort, period)),
    ),
  );
  return h(
    'figure',
    { class: 'chart retention', dataset: { chart: 'retention' } },
    h('table', { class: 'retention-grid' }, h('thead', null, head), h('tbody', null, body)),
  );
}

function retentionCell(cohort, period) {
  const count = cohort.counts[period];
  if (count === undefined) return h('td', { class: 'empty' });
  const share = cohort.size > 0 ? count / cohort.size : 0;
  const cell = h(
    'td',
    {
      class: share > 0.55 ? 'share dark' : 'share',
      title: `${count} of ${cohort.size}`,
      dataset: { period: String(period), count: String(count) },
    },
    h('span', { class: 'pct' }, `${(share * 100).toFixed(1)}%`),
    h('span', { class: 'count' }, formatNumber(count)),
  );
  // Set through the CSSOM, which the page's Content-Security-Policy allows (a style attribute it would not).
  cell.style.backgroundColor = `rgba(37, 99, 235, ${(0.06 + 0.84 * share).toFixed(3)})`;
  return cell;
}

/** The rows as an HTML table, cells as text. */
export function resultTable(result) {
  const types = result.types ?? [];
  const numeric = result.columns.map((_, i) => types[i] !== undefined && isNumericType(types[i]));
  const rows = result.results.slice(0, MAX_TABLE_ROWS);
  const table = h(
    'table',
    { class: 'result' },
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        result.columns.map((name, i) =>
          h('th', { title: types[i], class: numeric[i] ? 'num' : undefined }, String(name)),
        ),
      ),
    ),
    h(
      'tbody',
      null,
      rows.map((row) =>
        h(
          'tr',
          null,
          row.map((value, i) => cell(value, numeric[i])),
        ),
      ),
    ),
  );
  const more = result.results.length - rows.length;
  return h(
    'div',
    { class: 'table-box' },
    table,
    more > 0
      ? h(
          'p',
          { class: 'note' },
          `Showing the first ${formatNumber(rows.length)} rows of ${formatNumber(result.results.length)}.`,
        )
      : null,
  );
}

function cell(value, numeric) {
  if (value === null || value === undefined) return h('td', { class: 'null' }, 'null');
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  return h('td', numeric || typeof value === 'number' ? { class: 'num' } : null, text);
}

function debugDetails(result) {
  return h(
    'details',
    { class: 'debug' },
    h('summary', null, 'Query as it ran'),
    result.hogql === undefined
      ? null
      : [h('h4', null, 'Dialect (hogql)'), h('pre', { class: 'code' }, result.hogql)],
    result.clickhouse === undefined
      ? null
      : [h('h4', null, 'ClickHouse SQL'), h('pre', { class: 'code' }, result.clickhouse)],
    Array.isArray(result.timings)
      ? [
          h('h4', null, 'Timings'),
          h(
            'table',
            { class: 'timings' },
            h(
              'tbody',
              null,
              result.timings.map((t) =>
                h(
                  'tr',
                  null,
                  h('td', null, String(t.k)),
                  h('td', { class: 'num' }, `${(Number(t.t) * 1000).toFixed(2)} ms`),
                ),
              ),
            ),
          ),
        ]
      : null,
  );
}
