// Line and bar charts drawn by Chart.js (its UMD build, loaded before the modules as `window.Chart`). Without
// it the console shows tables only.

import { h } from './dom.js';

const PALETTE = [
  '#2563eb',
  '#dc2626',
  '#16a34a',
  '#d97706',
  '#7c3aed',
  '#0891b2',
  '#db2777',
  '#65a30d',
  '#475569',
  '#ea580c',
];

export function chartsAvailable() {
  return typeof window.Chart === 'function';
}

/**
 * Draws `spec` (`{kind, type: 'line' | 'bar', title, labels, datasets: [{label, data}], tooltip?}`) in a new
 * figure at the end of `parent`, which is in the page (Chart.js sizes the canvas from its box). `charts`
 * collects the Chart objects, so that the view can destroy them when it is replaced.
 */
export function drawChart(parent, spec, charts) {
  const canvas = h('canvas', { role: 'img', 'aria-label': spec.title });
  const figure = h(
    'figure',
    { class: 'chart', dataset: { chart: spec.kind } },
    h('div', { class: 'chart-box' }, canvas),
  );
  const many = spec.datasets.length > 1;
  const datasets = spec.datasets.map((d, i) => {
    const color = PALETTE[i % PALETTE.length];
    return {
      label: d.label,
      data: d.data,
      borderColor: color,
      backgroundColor: spec.type === 'bar' ? `${color}cc` : color,
      borderWidth: spec.type === 'line' ? 2 : 0,
      pointRadius: spec.labels.length > 60 ? 0 : 2,
      tension: 0,
    };
  });
  parent.append(figure);
  charts.push(
    new window.Chart(canvas, {
      type: spec.type,
      data: { labels: spec.labels, datasets },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        interaction: { mode: 'index', intersect: false },
        plugins: {
          legend: { display: many, position: 'bottom' },
          tooltip: spec.tooltip ? { callbacks: { afterLabel: spec.tooltip } } : {},
        },
        scales: { y: { beginAtZero: true } },
      },
    }),
  );
  return figure;
}
