/**
 * The classic HdrHistogram latency-by-percentile plot, as a dependency-free SVG: x runs 0% → 99.99% on a
 * "nines" scale (1 / (1 − p)), y is latency on a log scale, one line per run. Percentile tables hide the
 * shape of the tail; this shows it at a glance.
 */
import { decodeFromCompressedBase64 } from 'hdr-histogram-js';

const WIDTH = 900;
const HEIGHT = 420;
const MARGIN = { left: 84, right: 220, top: 34, bottom: 50 };
const PERCENTILES = [0, 25, 50, 75, 90, 95, 97.5, 99, 99.5, 99.75, 99.9, 99.95, 99.975, 99.99];
const X_TICKS = [0, 90, 99, 99.9, 99.99];
const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e'];

/** One line of the plot: a run's latency histogram (HdrHistogram compressed base64, microseconds). */
export interface PlotSeries {
  readonly label: string;
  readonly histogram: string;
}

interface Series {
  readonly label: string;
  readonly points: readonly { readonly percentile: number; readonly ms: number }[];
}

/** Position on the nines axis: 0% → 0, 90% → 1, 99% → 2, 99.9% → 3, … */
function nines(percentile: number): number {
  return Math.log10(100 / (100 - Math.min(percentile, 99.99)));
}

function series(runs: readonly PlotSeries[]): Series[] {
  const out: Series[] = [];
  for (const run of runs) {
    const h = decodeFromCompressedBase64(run.histogram);
    if (h.totalCount === 0) continue;
    out.push({
      label: run.label,
      points: PERCENTILES.map((p) => ({
        percentile: p,
        ms: Math.max(0.01, h.getValueAtPercentile(p) / 1000),
      })),
    });
  }
  return out;
}

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The SVG text, or undefined when no run recorded any latency. */
export function latencyPlot(title: string, runs: readonly PlotSeries[]): string | undefined {
  const lines = series(runs);
  if (lines.length === 0) return undefined;
  const all = lines.flatMap((s) => s.points.map((p) => p.ms));
  const yMin = Math.floor(Math.log10(Math.min(...all)));
  const yMax = Math.ceil(Math.log10(Math.max(...all)));
  const xMax = nines(99.99);
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const x = (p: number): number => MARGIN.left + (nines(p) / xMax) * plotW;
  const y = (ms: number): number =>
    MARGIN.top + plotH - ((Math.log10(ms) - yMin) / Math.max(1, yMax - yMin)) * plotH;

  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="white"/>`,
    `<text x="${MARGIN.left}" y="18" font-size="14">${escape(title)}</text>`,
  ];
  for (let e = yMin; e <= yMax; e++) {
    const yy = y(10 ** e);
    parts.push(
      `<line x1="${MARGIN.left}" x2="${MARGIN.left + plotW}" y1="${yy}" y2="${yy}" stroke="#ddd"/>`,
      `<text x="${MARGIN.left - 6}" y="${yy + 4}" text-anchor="end">${10 ** e >= 1 ? 10 ** e : (10 ** e).toFixed(-e)} ms</text>`,
    );
  }
  for (const p of X_TICKS) {
    parts.push(
      `<line x1="${x(p)}" x2="${x(p)}" y1="${MARGIN.top}" y2="${MARGIN.top + plotH}" stroke="#ddd"/>`,
      `<text x="${x(p)}" y="${MARGIN.top + plotH + 18}" text-anchor="middle">${p}%</text>`,
    );
  }
  parts.push(
    `<text x="${MARGIN.left + plotW / 2}" y="${HEIGHT - 10}" text-anchor="middle">percentile</text>`,
  );
  lines.forEach((s, i) => {
    const colour = COLOURS[i % COLOURS.length]!;
    const d = s.points.map(
      (p, j) => `${j === 0 ? 'M' : 'L'}${x(p.percentile).toFixed(1)},${y(p.ms).toFixed(1)}`,
    );
    parts.push(
      `<path d="${d.join(' ')}" fill="none" stroke="${colour}" stroke-width="2"/>`,
      `<rect x="${WIDTH - MARGIN.right + 12}" y="${MARGIN.top + i * 20}" width="12" height="3" fill="${colour}"/>`,
      `<text x="${WIDTH - MARGIN.right + 30}" y="${MARGIN.top + i * 20 + 5}">${escape(s.label)}</text>`,
    );
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
