import { maxMin, requestRates, watchCounts, type Series } from './sim/analysis.ts';

/** One strategy's run as the chart draws it. */
export interface ChartRun {
  label: string;
  series: Series;
  marks: ReadonlyArray<{ second: number; label: string }>;
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e'];
const PANEL_W = 300;
const PANEL_H = 120;
const MARGIN = { left: 46, right: 12, top: 22, bottom: 22 };
const LABEL_H = 20;
/** Ratios are drawn up to this; above it the line runs along the top. */
const RATIO_CAP = 3;

/**
 * One chart per scenario: a row per strategy with three panels — request rate per apiserver, open
 * watches per apiserver, and the max/min ratio of each (1.2 dashed) — and the scenario's moments
 * as vertical lines.
 */
export function chart(title: string, runs: readonly ChartRun[]): string {
  const cellW = PANEL_W + MARGIN.left + MARGIN.right;
  const cellH = PANEL_H + MARGIN.top + MARGIN.bottom;
  const width = cellW * 3;
  const height = 30 + runs.length * (cellH + LABEL_H);
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${width / 2}" y="18" text-anchor="middle" font-size="14" font-weight="bold">${escape(title)}</text>`,
  ];
  runs.forEach((run, row) => {
    const y0 = 30 + row * (cellH + LABEL_H);
    parts.push(`<text x="6" y="${y0 + 14}" font-size="13" font-weight="bold">${escape(run.label)}</text>`);
    const requests = requestRates(run.series);
    const watches = watchCounts(run.series);
    const ratios = [maxMin(requests, run.series), maxMin(watches, run.series)];
    const panels: Array<{ name: string; series: number[][]; ratio?: boolean }> = [
      { name: 'requests/s per apiserver', series: transpose(requests) },
      { name: 'open watches per apiserver', series: transpose(watches) },
      { name: 'max/min: requests (solid), watches (dotted)', series: ratios.map((r) => r.map((v) => (Number.isNaN(v) ? NaN : Math.min(v, RATIO_CAP)))), ratio: true },
    ];
    panels.forEach((panel, col) => parts.push(drawPanel(panel, col * cellW, y0 + LABEL_H, run)));
  });
  parts.push('</svg>');
  return parts.join('\n');
}

function drawPanel(panel: { name: string; series: number[][]; ratio?: boolean }, x0: number, y0: number, run: ChartRun): string {
  const seconds = run.series.seconds;
  const left = x0 + MARGIN.left;
  const top = y0 + MARGIN.top;
  let max = panel.ratio ? RATIO_CAP : 0;
  const min = panel.ratio ? 1 : 0;
  if (!panel.ratio) for (const line of panel.series) for (const v of line) if (v > max) max = v;
  max = panel.ratio ? max : niceCeiling(max);
  const x = (s: number): number => left + (s / Math.max(1, seconds - 1)) * PANEL_W;
  const y = (v: number): number => top + PANEL_H - ((v - min) / (max - min || 1)) * PANEL_H;
  const out: string[] = [
    `<text x="${left}" y="${top - 6}" fill="#333">${escape(panel.name)}</text>`,
    `<rect x="${left}" y="${top}" width="${PANEL_W}" height="${PANEL_H}" fill="none" stroke="#999"/>`,
    `<text x="${left - 4}" y="${top + 4}" text-anchor="end">${format(max)}</text>`,
    `<text x="${left - 4}" y="${top + PANEL_H}" text-anchor="end">${format(min)}</text>`,
    `<text x="${left}" y="${top + PANEL_H + 14}">0</text>`,
    `<text x="${left + PANEL_W}" y="${top + PANEL_H + 14}" text-anchor="end">${Math.round(seconds / 60)} min</text>`,
  ];
  for (const mark of run.marks) {
    const mx = x(mark.second).toFixed(1);
    out.push(`<line x1="${mx}" y1="${top}" x2="${mx}" y2="${top + PANEL_H}" stroke="#bbb" stroke-dasharray="2,3"><title>${escape(mark.label)}</title></line>`);
  }
  if (panel.ratio) out.push(`<line x1="${left}" y1="${y(1.2).toFixed(1)}" x2="${left + PANEL_W}" y2="${y(1.2).toFixed(1)}" stroke="#2ca02c" stroke-dasharray="4,3"/>`);
  panel.series.forEach((line, i) => {
    const color = panel.ratio ? '#333' : COLORS[i % COLORS.length]!;
    const dash = panel.ratio && i === 1 ? ' stroke-dasharray="1,2"' : '';
    out.push(`<path d="${path(line, x, y)}" fill="none" stroke="${color}" stroke-width="1.2"${dash}/>`);
  });
  return out.join('\n');
}

/** An SVG path through the points, broken where a value is missing (NaN: the apiserver is not ready). */
function path(values: readonly number[], x: (s: number) => number, y: (v: number) => number): string {
  let d = '';
  let pen = false;
  values.forEach((v, s) => {
    if (Number.isNaN(v)) {
      pen = false;
      return;
    }
    d += `${pen ? 'L' : 'M'}${x(s).toFixed(1)},${y(v).toFixed(1)}`;
    pen = true;
  });
  return d;
}

function transpose(rows: number[][]): number[][] {
  const n = rows[0]?.length ?? 0;
  return Array.from({ length: n }, (_, i) => rows.map((row) => row[i]!));
}

function niceCeiling(v: number): number {
  if (v <= 0) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(v));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * magnitude >= v) return step * magnitude;
  return 10 * magnitude;
}

function format(v: number): string {
  return Number.isInteger(v) ? String(v) : v.toFixed(1);
}

function escape(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}
