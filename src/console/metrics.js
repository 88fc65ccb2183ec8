// Capture's live counters: `/metrics` (Prometheus text) read every few seconds while the view is shown, the
// few figures a person watches picked out, and rates worked out from one reading to the next.

import { api } from './api.js';
import { fill, formatBytes, formatNumber, h } from './dom.js';

const REFRESH_MS = 3000;

/** `name{labels} value` lines → Map(name → [{labels, value}]); comments and timestamps are skipped. */
export function parsePrometheus(text) {
  const out = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const [, name, labelText, raw] = match;
    const labels = {};
    if (labelText) {
      for (const m of labelText.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
        labels[m[1]] = m[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
      }
    }
    const value = raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw);
    let samples = out.get(name);
    if (!samples) out.set(name, (samples = []));
    samples.push({ labels, value });
  }
  return out;
}

/** The sum of a metric's samples, grouped by one label (or all together without one). */
export function sumBy(metrics, name, label) {
  const groups = new Map();
  for (const { labels, value } of metrics.get(name) ?? []) {
    const key = label === undefined ? '' : (labels[label] ?? '');
    groups.set(key, (groups.get(key) ?? 0) + value);
  }
  return groups;
}

function total(metrics, name) {
  return sumBy(metrics, name).get('') ?? 0;
}

/** What the view shows, from one reading. Counters carry `rate: true`: the view adds their rate per second. */
export function summarise(metrics) {
  const mean = (name) => {
    const count = total(metrics, `${name}_count`);
    return count > 0 ? total(metrics, `${name}_sum`) / count : null;
  };
  const ms = (s) => (s === null ? '–' : `${(s * 1000).toFixed(2)} ms`);
  return [
    {
      title: 'Capture requests',
      rows: [
        ['all', total(metrics, 'weir_capture_requests_total'), { rate: true }],
        ...[...sumBy(metrics, 'weir_capture_requests_total', 'status')]
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([status, n]) => [`status ${status}`, n, { rate: true }]),
        ['body bytes', total(metrics, 'weir_capture_body_bytes_total'), { rate: true, bytes: true }],
        ['mean latency', ms(mean('weir_capture_request_duration_seconds'))],
      ],
    },
    {
      title: 'Events',
      rows: [
        ...lanes(metrics, 'weir_capture_events_total', 'accepted'),
        ...lanes(metrics, 'weir_ingest_events_total', 'stored'),
        ...[...sumBy(metrics, 'weir_capture_events_dropped_total', 'reason')].map(([reason, n]) => [
          `dropped: ${reason}`,
          n,
          { rate: true },
        ]),
        ['duplicates skipped', total(metrics, 'weir_ingest_duplicate_events_total'), { rate: true }],
      ],
    },
    {
      title: 'Ingest and store',
      rows: [
        ['events pending', total(metrics, 'weir_ingest_pending_events')],
        ['store bytes not yet applied', total(metrics, 'weir_store_pending_bytes'), { bytes: true }],
        ['store calls waiting for the engine', total(metrics, 'weir_store_engine_waiting')],
        ['reads running', total(metrics, 'weir_store_reads_running')],
        ['reads waiting for a connection', total(metrics, 'weir_store_reads_waiting')],
        ['reads refused', total(metrics, 'weir_store_reads_refused_total'), { rate: true }],
        ['mean insert rows', formatMean(mean('weir_store_insert_rows'))],
        ['mean insert', ms(mean('weir_store_insert_duration_seconds'))],
        ['mean commit', ms(mean('weir_store_commit_duration_seconds'))],
        ['insert errors', total(metrics, 'weir_store_insert_errors_total'), { rate: true }],
        ['apply errors', total(metrics, 'weir_store_apply_errors_total'), { rate: true }],
        ['rows quarantined', total(metrics, 'weir_ingest_rows_quarantined_total'), { rate: true }],
      ],
    },
  ];
}

function lanes(metrics, name, what) {
  const byLane = sumBy(metrics, name, 'lane');
  if (byLane.size === 0) return [[`${what}`, 0, { rate: true }]];
  return [...byLane]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([lane, n]) => [`${what}: ${lane}`, n, { rate: true }]);
}

function formatMean(n) {
  return n === null ? '–' : formatNumber(n);
}

/**
 * Shows the counters in `parent` and reads them again every few seconds while the tab is visible. Returns
 * the function that stops it (the view being left).
 */
export function showMetrics(parent) {
  const updated = h('p', { class: 'note', id: 'metrics-updated' }, 'Reading /metrics…');
  const grid = h('div', { class: 'cards', id: 'metrics' });
  fill(parent, h('h2', null, 'Live counters'), updated, grid);
  let previous;
  let timer;
  let stopped = false;
  let reading = false;
  const read = async () => {
    timer = undefined;
    if (stopped || reading) return;
    reading = true;
    try {
      const text = await api.metrics();
      if (stopped) return;
      const now = performance.now();
      const sections = summarise(parsePrometheus(text));
      fill(
        grid,
        sections.map((s) => card(s, previous, now)),
      );
      previous = {
        at: now,
        values: new Map(sections.flatMap((s) => s.rows.map(([label, v]) => [`${s.title}/${label}`, v]))),
      };
      fill(updated, `Updated ${new Date().toLocaleTimeString()}; every ${REFRESH_MS / 1000} s while shown.`);
      updated.classList.remove('error');
    } catch (err) {
      fill(updated, `Could not read /metrics: ${err.message}`);
      updated.classList.add('error');
    } finally {
      reading = false;
    }
    schedule();
  };
  const schedule = () => {
    if (!stopped && !reading && timer === undefined && document.visibilityState === 'visible')
      timer = setTimeout(() => void read(), REFRESH_MS);
  };
  const onVisibility = () => {
    if (document.visibilityState === 'visible' && timer === undefined) void read();
    else if (document.visibilityState !== 'visible') {
      clearTimeout(timer);
      timer = undefined;
    }
  };
  document.addEventListener('visibilitychange', onVisibility);
  void read();
  return () => {
    stopped = true;
    clearTimeout(timer);
    document.removeEventListener('visibilitychange', onVisibility);
  };
}

function card(section, previous, now) {
  return h(
    'section',
    { class: 'card' },
    h('h3', null, section.title),
    h(
      'table',
      { class: 'counters' },
      h(
        'tbody',
        null,
        section.rows.map(([label, value, opts = {}]) => {
          const shown =
            typeof value !== 'number' ? value : opts.bytes ? formatBytes(value) : formatNumber(value);
          let rate = '';
          const before = previous?.values.get(`${section.title}/${label}`);
          if (opts.rate && typeof before === 'number') {
            const perSecond = ((value - before) * 1000) / (now - previous.at);
            rate = `${opts.bytes ? formatBytes(perSecond) : formatNumber(perSecond)}/s`;
          }
          return h(
            'tr',
            { dataset: { metric: `${section.title}/${label}` } },
            h('th', { scope: 'row' }, label),
            h('td', { class: 'num value' }, shown),
            h('td', { class: 'num rate' }, rate),
          );
        }),
      ),
    ),
  );
}
