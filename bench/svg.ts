// A small hand-rolled SVG writer for BENCHMARKS.md: horizontal bar charts, one bar per run.

export interface BarSeries {
  /** e.g. `run 1`. */
  name: string;
  /** One value per label; NaN or null draws nothing. */
  values: Array<number | null>;
}

export interface BarChart {
  title: string;
  labels: string[];
  series: BarSeries[];
  /** Shown after each value, e.g. ` ms`. */
  unit?: string;
  /** Where the axis ends; default the largest value. */
  max?: number;
  /** A vertical reference line, e.g. the target. */
  marker?: { value: number; label: string };
}

const COLOURS = ['#3b6fb6', '#e08a2c', '#4a9a5b', '#9b59b6'];
const LABEL_W = 230;
const BAR_W = 420;
const ROW_H = 14;

const escape = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function format(value: number): string {
  if (Math.abs(value) >= 100) return value.toFixed(0);
  if (Math.abs(value) >= 10) return value.toFixed(1);
  return value.toFixed(Math.abs(value) >= 1 ? 2 : 3);
}

/** Renders `chart` as a standalone SVG document. */
export function barChart(chart: BarChart): string {
  const values = chart.series.flatMap((s) => s.values).filter((v): v is number => v !== null && Number.isFinite(v));
  const max = chart.max ?? Math.max(1e-9, ...values, chart.marker?.value ?? 0);
  const group = chart.series.length * ROW_H + 8;
  const top = 40;
  const height = top + chart.labels.length * group + 10;
  const width = LABEL_W + BAR_W + 80;
  const x = (v: number): number => LABEL_W + (Math.min(v, max) / max) * BAR_W;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="8" y="16" font-size="13" font-weight="bold">${escape(chart.title)}</text>`,
  ];
  chart.series.forEach((s, k) => {
    const lx = LABEL_W + k * 90;
    parts.push(`<rect x="${lx}" y="24" width="10" height="10" fill="${COLOURS[k % COLOURS.length]}"/><text x="${lx + 14}" y="33">${escape(s.name)}</text>`);
  });
  chart.labels.forEach((label, i) => {
    const y0 = top + i * group;
    parts.push(`<text x="${LABEL_W - 6}" y="${y0 + (chart.series.length * ROW_H) / 2 + 4}" text-anchor="end">${escape(label)}</text>`);
    chart.series.forEach((s, k) => {
      const value = s.values[i];
      if (value === null || value === undefined || !Number.isFinite(value)) return;
      const y = y0 + k * ROW_H;
      const w = Math.max(1, x(value) - LABEL_W);
      parts.push(`<rect x="${LABEL_W}" y="${y}" width="${w.toFixed(1)}" height="${ROW_H - 3}" fill="${COLOURS[k % COLOURS.length]}"/>`);
      parts.push(`<text x="${(LABEL_W + w + 4).toFixed(1)}" y="${y + ROW_H - 5}">${format(value)}${value > max ? '+' : ''}${escape(chart.unit ?? '')}</text>`);
    });
  });
  if (chart.marker) {
    const mx = x(chart.marker.value).toFixed(1);
    parts.push(`<line x1="${mx}" y1="${top - 4}" x2="${mx}" y2="${height - 6}" stroke="#c0392b" stroke-dasharray="4 3"/>`);
    parts.push(`<text x="${mx}" y="${height - 1}" fill="#c0392b" text-anchor="middle" font-size="10">${escape(chart.marker.label)}</text>`);
  }
  parts.push(`<line x1="${LABEL_W}" y1="${top - 4}" x2="${LABEL_W}" y2="${height - 6}" stroke="#333"/>`, '</svg>', '');
  return parts.join('\n');
}
