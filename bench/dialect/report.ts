/** The dialect benchmark's results as Markdown (bench/results/dialect.md) and a CDF plot (SVG). */

export interface Row {
  readonly name: string;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

export interface LimitRow {
  readonly name: string;
  readonly parseUs: number;
  readonly parsePrintUs: number;
}

export interface Report {
  readonly command: string;
  readonly startedAt: string;
  readonly revision: string;
  readonly machine: Readonly<Record<string, string | number>>;
  readonly corpus: { readonly queries: number; readonly chars: number; readonly tokens: number };
  readonly rows: readonly Row[];
  readonly limits: readonly LimitRow[];
  readonly timing: { readonly minRoundMs: number; readonly rounds: number; readonly passes: number };
  /** Per pass, the cores other processes used meanwhile (undefined where /proc could not tell). */
  readonly otherCores: readonly (number | undefined)[];
}

const us = (n: number): string =>
  n >= 1000 ? `${(n / 1000).toFixed(2)} ms` : `${n.toFixed(n < 10 ? 2 : 1)} µs`;

export function markdownReport(r: Report): string {
  const machine = Object.entries(r.machine)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  const avgChars = Math.round(r.corpus.chars / r.corpus.queries);
  const avgTokens = Math.round(r.corpus.tokens / r.corpus.queries);
  return `# Dialect parse and print benchmark (issue 4)

Made by \`${r.command}\` on ${r.startedAt}; Weir at ${r.revision}.

Machine: ${machine}. The machine is shared: other processes used
${r.otherCores.map((c) => (c === undefined ? '?' : c.toFixed(2))).join(', ')} cores during the ${r.otherCores.length} passes (each pass waits, within a budget, for a quiet second first).

Method: the ${r.corpus.queries} queries of the valid corpus (\`test/fixtures/dialect/valid\`; ${avgChars} characters and
${avgTokens} tokens on average). Each operation runs on each query in a loop of at least ${r.timing.minRoundMs} ms, ${r.timing.rounds}
rounds (the median round counts), all operations on one query back to back, and the corpus ${r.timing.passes} times over
(the median pass counts), after a warm-up over the whole corpus; figures are per call. p50 and p99 are over
the queries. "tokenize" is the floor of any parser over these tokens; "ClickHouse EXPLAIN AST" is
ClickHouse's own parser reached through chDB (placeholders inlined), what one would call instead of a parser
of one's own.

| operation, per query | p50 | p99 | max | mean |
| --- | ---: | ---: | ---: | ---: |
${r.rows.map((row) => `| ${row.name} | ${us(row.p50)} | ${us(row.p99)} | ${us(row.max)} | ${us(row.mean)} |`).join('\n')}

At the limits (what a hostile or careless query can cost before it is refused):

| query | parse | parse + print |
| --- | ---: | ---: |
${r.limits.map((l) => `| ${l.name} | ${us(l.parseUs)} | ${us(l.parsePrintUs)} |`).join('\n')}

Per-query distribution: [dialect-cdf.svg](dialect-cdf.svg).
`;
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b'];

/** One line per series: the share of queries (y) done within x microseconds (log scale). */
export function cdfSvg(series: Readonly<Record<string, readonly number[]>>): string {
  const width = 720;
  const height = 420;
  const left = 60;
  const right = 220;
  const top = 20;
  const bottom = 50;
  const all = Object.values(series).flat();
  const lo = Math.log10(Math.max(0.1, Math.min(...all) * 0.8));
  const hi = Math.log10(Math.max(...all) * 1.2);
  const x = (v: number): number => left + ((Math.log10(v) - lo) / (hi - lo)) * (width - left - right);
  const y = (f: number): number => top + (1 - f) * (height - top - bottom);
  const parts: string[] = [];
  for (let d = Math.ceil(lo); d <= Math.floor(hi); d++) {
    const v = 10 ** d;
    parts.push(
      `<line x1="${x(v)}" y1="${top}" x2="${x(v)}" y2="${height - bottom}" stroke="#ddd"/>`,
      `<text x="${x(v)}" y="${height - bottom + 16}" text-anchor="middle" font-size="11">${v >= 1000 ? `${v / 1000} ms` : `${v} µs`}</text>`,
    );
  }
  for (const f of [0, 0.5, 0.99, 1]) {
    parts.push(
      `<line x1="${left}" y1="${y(f)}" x2="${width - right}" y2="${y(f)}" stroke="#eee"/>`,
      `<text x="${left - 6}" y="${y(f) + 4}" text-anchor="end" font-size="11">${f * 100}%</text>`,
    );
  }
  Object.entries(series).forEach(([name, values], i) => {
    const sorted = [...values].sort((a, b) => a - b);
    const points = sorted
      .map((v, k) => `${x(v).toFixed(1)},${y((k + 1) / sorted.length).toFixed(1)}`)
      .join(' ');
    const color = COLORS[i % COLORS.length]!;
    parts.push(
      `<polyline fill="none" stroke="${color}" stroke-width="1.5" points="${points}"/>`,
      `<text x="${width - right + 10}" y="${top + 16 + i * 18}" font-size="12" fill="${color}">${name}</text>`,
    );
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif">
<rect width="100%" height="100%" fill="white"/>
<text x="${left}" y="${height - 12}" font-size="12">time per query (log scale); y: share of the ${Object.values(series)[0]?.length ?? 0} corpus queries done within it</text>
${parts.join('\n')}
</svg>
`;
}
