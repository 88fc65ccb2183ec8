/**
 * Disk use by simulated day as a dependency-free SVG, in the style of bench/soak/memory-plot.ts: x is the
 * day, y is MB from zero; a solid line per series of `du`, a dashed one of active parts. A line that climbs
 * to the right edge has not levelled off; one that flattens has.
 */

const WIDTH = 900;
const HEIGHT = 440;
const MARGIN = { left: 70, right: 200, top: 34, bottom: 50 };
const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e'];

export interface DiskSeries {
  readonly name: string;
  /** [day, bytes] */
  readonly points: readonly (readonly [number, number])[];
  readonly dashed: boolean;
}

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** A round step for about `count` ticks over `span`. */
function tickStep(span: number, count: number): number {
  const raw = Math.max(span, 1e-9) / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * magnitude >= raw) return m * magnitude;
  return 10 * magnitude;
}

export function diskPlot(title: string, series: readonly DiskSeries[]): string {
  const points = series.flatMap((s) => s.points);
  const dMax = Math.max(1, ...points.map(([d]) => d));
  const yTop = Math.max(1, ...points.map(([, b]) => b / 1e6));
  const yStep = tickStep(yTop, 6);
  const yMax = Math.ceil(yTop / yStep) * yStep;
  const xStep = tickStep(dMax, 10);
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const x = (day: number): number => MARGIN.left + (day / dMax) * plotW;
  const y = (megabytes: number): number => MARGIN.top + plotH - (megabytes / yMax) * plotH;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="white"/>`,
    `<text x="${MARGIN.left}" y="18" font-size="14">${escape(title)}</text>`,
  ];
  for (let v = 0; v <= yMax + 1e-9; v += yStep)
    parts.push(
      `<line x1="${MARGIN.left}" x2="${MARGIN.left + plotW}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`,
      `<text x="${MARGIN.left - 6}" y="${y(v) + 4}" text-anchor="end">${v} MB</text>`,
    );
  for (let d = 0; d <= dMax + 1e-9; d += xStep)
    parts.push(`<text x="${x(d)}" y="${MARGIN.top + plotH + 18}" text-anchor="middle">${d}</text>`);
  parts.push(
    `<text x="${MARGIN.left + plotW / 2}" y="${HEIGHT - 12}" text-anchor="middle">day</text>`,
    `<rect x="${MARGIN.left}" y="${MARGIN.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#999"/>`,
  );
  series.forEach((s, i) => {
    const colour = COLOURS[Math.floor(i / 2) % COLOURS.length]!;
    const path = s.points.map(([d, b]) => `${x(d).toFixed(1)},${y(b / 1e6).toFixed(1)}`).join(' ');
    const dash = s.dashed ? ' stroke-dasharray="6 4"' : '';
    parts.push(
      `<polyline points="${path}" fill="none" stroke="${colour}" stroke-width="2"${dash}/>`,
      `<line x1="${WIDTH - MARGIN.right + 12}" x2="${WIDTH - MARGIN.right + 36}" y1="${MARGIN.top + 10 + i * 20}" y2="${MARGIN.top + 10 + i * 20}" stroke="${colour}" stroke-width="2"${dash}/>`,
      `<text x="${WIDTH - MARGIN.right + 42}" y="${MARGIN.top + 14 + i * 20}">${escape(s.name)}</text>`,
    );
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
