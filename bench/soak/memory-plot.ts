/**
 * The soak's memory over time as a dependency-free SVG, in the style of src/loadgen/latency-plot.ts: x is
 * minutes since the soak's load began (the max-rate search before it is negative), y is MB from zero; per
 * bus one solid line for resident memory and one dashed for the JS heap in use. A line that climbs to the
 * right edge has not levelled off; one that flattens has.
 */
import type { MemorySample } from './memory.ts';

const WIDTH = 900;
const HEIGHT = 440;
const MARGIN = { left: 70, right: 230, top: 34, bottom: 50 };
const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e'];
const MB = 1024 * 1024;

export interface MemoryPlotSeries {
  readonly bus: string;
  readonly samples: readonly MemorySample[];
  /** Seconds of the soak's load: a marker shows where it ended. */
  readonly soakSeconds: number;
}

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** A round step for about `count` ticks over `span`. */
function tickStep(span: number, count: number): number {
  const raw = span / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * magnitude >= raw) return m * magnitude;
  return 10 * magnitude;
}

/** The SVG text, or undefined when no sample has a resident-memory figure. */
export function memoryPlot(title: string, series: readonly MemoryPlotSeries[]): string | undefined {
  const points = series.flatMap((s) => s.samples);
  const values = points.flatMap((p) => [p.rssBytes, p.heapUsedBytes]).filter((v) => v !== undefined);
  if (values.length === 0) return undefined;
  const tMin = Math.min(0, ...points.map((p) => p.t)) / 60;
  const tMax = Math.max(...points.map((p) => p.t), ...series.map((s) => s.soakSeconds)) / 60;
  const yTop = Math.max(...values) / MB;
  const yStep = tickStep(yTop, 6);
  const yMax = Math.ceil(yTop / yStep) * yStep;
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const x = (minutes: number): number =>
    MARGIN.left + ((minutes - tMin) / Math.max(1e-9, tMax - tMin)) * plotW;
  const y = (mb: number): number => MARGIN.top + plotH - (mb / yMax) * plotH;

  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="white"/>`,
    `<text x="${MARGIN.left}" y="18" font-size="14">${escape(title)}</text>`,
  ];
  for (let mb = 0; mb <= yMax + 1e-9; mb += yStep) {
    parts.push(
      `<line x1="${MARGIN.left}" x2="${MARGIN.left + plotW}" y1="${y(mb)}" y2="${y(mb)}" stroke="#ddd"/>`,
      `<text x="${MARGIN.left - 6}" y="${y(mb) + 4}" text-anchor="end">${mb} MB</text>`,
    );
  }
  const xStep = tickStep(tMax - tMin, 8);
  for (let m = Math.ceil(tMin / xStep) * xStep; m <= tMax + 1e-9; m += xStep) {
    const label = Number(m.toFixed(3));
    parts.push(
      `<line x1="${x(m)}" x2="${x(m)}" y1="${MARGIN.top}" y2="${MARGIN.top + plotH}" stroke="${label === 0 ? '#888' : '#ddd'}"/>`,
      `<text x="${x(m)}" y="${MARGIN.top + plotH + 18}" text-anchor="middle">${label}</text>`,
    );
  }
  parts.push(
    `<text x="${MARGIN.left + plotW / 2}" y="${HEIGHT - 10}" text-anchor="middle">minutes since the soak's load began (before 0: the max-rate search)</text>`,
  );
  let legend = 0;
  const addLine = (label: string, colour: string, dashed: boolean, coords: [number, number][]): void => {
    if (coords.length === 0) return;
    const d = coords.map(
      ([t, b], j) => `${j === 0 ? 'M' : 'L'}${x(t / 60).toFixed(1)},${y(b / MB).toFixed(1)}`,
    );
    const dash = dashed ? ' stroke-dasharray="6 4"' : '';
    const ly = MARGIN.top + legend++ * 20;
    parts.push(
      `<path d="${d.join(' ')}" fill="none" stroke="${colour}" stroke-width="2"${dash}/>`,
      `<line x1="${WIDTH - MARGIN.right + 12}" x2="${WIDTH - MARGIN.right + 36}" y1="${ly}" y2="${ly}" stroke="${colour}" stroke-width="2"${dash}/>`,
      `<text x="${WIDTH - MARGIN.right + 42}" y="${ly + 4}">${escape(label)}</text>`,
    );
  };
  series.forEach((s, i) => {
    const colour = COLOURS[i % COLOURS.length]!;
    const end = x(s.soakSeconds / 60);
    parts.push(
      `<line x1="${end}" x2="${end}" y1="${MARGIN.top}" y2="${MARGIN.top + plotH}" stroke="${colour}" stroke-opacity="0.4" stroke-dasharray="2 3"/>`,
    );
    const coords = (f: (p: MemorySample) => number | undefined): [number, number][] =>
      s.samples.flatMap((p) => {
        const v = f(p);
        return v === undefined ? [] : [[p.t, v] as [number, number]];
      });
    addLine(
      `${s.bus}: resident (RSS)`,
      colour,
      false,
      coords((p) => p.rssBytes),
    );
    addLine(
      `${s.bus}: JS heap used`,
      colour,
      true,
      coords((p) => p.heapUsedBytes),
    );
  });
  parts.push(
    `<text x="${WIDTH - MARGIN.right + 12}" y="${MARGIN.top + legend * 20 + 10}" fill="#666">dotted: end of each soak's load</text>`,
    '</svg>',
  );
  return `${parts.join('\n')}\n`;
}
