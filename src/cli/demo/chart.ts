// The demo's chart: requests/s at each apiserver over time, one panel per client, written by hand as
// SVG 1.1 (no dependency, opens in any browser).

export interface ChartInput {
  title: string;
  durationMs: number;
  /** Width of the window each point averages over. */
  stepMs: number;
  apiservers: readonly string[];
  /**
   * One panel per client; `series[i][w]` is apiserver i's requests/s in window w; `note` a line
   * under the label; `failuresAtMs` when calls failed, drawn as red ticks on the time axis.
   */
  panels: ReadonlyArray<{ label: string; note?: string; series: readonly (readonly number[])[]; failuresAtMs?: readonly number[] }>;
  phases: ReadonlyArray<{ title: string; atMs: number; disrupts?: string | undefined }>;
}

const COLORS = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#b07aa1', '#76b7b2', '#edc948', '#ff9da7', '#9c755f'];
const WIDTH = 960;
const LEFT = 64;
const RIGHT = 150;
/** Baseline of the first row of phase labels, the distance between rows, and from the last row to the first panel. */
const LABELS_TOP = 44;
const LABEL_ROW = 14;
const LABELS_TO_PANEL = 38;
/**
 * Width allowed per character of a 12-px sans-serif label: more than any common sans-serif font's
 * average (Arial, DejaVu Sans: 5.5–6.5 px), so labels placed apart are apart on screen.
 */
const LABEL_CHAR_PX = 7;
const LABEL_GAP = 8;
const FAILED = '#d62728';
const PANEL = 210;
const GAP = 74;

export function chartSvg(input: ChartInput): string {
  const plotWidth = WIDTH - LEFT - RIGHT;
  const x = (ms: number): number => LEFT + (Math.min(ms, input.durationMs) / input.durationMs) * plotWidth;
  const labels = labelRows(input.phases.map((p) => ({ x: x(p.atMs) + 3, text: p.title })));
  const rows = Math.max(2, ...labels.map((l) => l.row + 1));
  const firstTop = LABELS_TOP + (rows - 1) * LABEL_ROW + LABELS_TO_PANEL;
  const height = firstTop + input.panels.length * (PANEL + GAP) + 10;
  const peak = Math.max(1, ...input.panels.flatMap((p) => p.series.flatMap((s) => [...s])));
  const yMax = niceCeiling(peak);
  const out: string[] = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="12">`,
    `<title>${escape(input.title)}</title>`,
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="${LEFT}" y="24" font-size="16" font-weight="bold">${escape(input.title)}</text>`,
  ];
  // Phase labels across the top, in as many rows as it takes for none to overlap another.
  for (const label of labels) {
    out.push(`<text class="phase" x="${fmt(label.x)}" y="${LABELS_TOP + label.row * LABEL_ROW}" fill="#555555">${escape(label.text)}</text>`);
  }
  input.panels.forEach((panel, n) => {
    const top = firstTop + n * (PANEL + GAP);
    const y = (v: number): number => top + PANEL - (v / yMax) * PANEL;
    out.push(`<g class="panel" data-client="${escape(panel.label)}">`);
    // Disrupted stretches: from a phase that disrupts an apiserver to the next phase.
    input.phases.forEach((p, i) => {
      if (!p.disrupts) return;
      const end = input.phases[i + 1]?.atMs ?? input.durationMs;
      out.push(`<rect x="${fmt(x(p.atMs))}" y="${top}" width="${fmt(x(end) - x(p.atMs))}" height="${PANEL}" fill="#f4e3e3"/>`);
    });
    for (const tick of ticks(yMax)) {
      out.push(`<line x1="${LEFT}" y1="${fmt(y(tick))}" x2="${LEFT + plotWidth}" y2="${fmt(y(tick))}" stroke="#e5e5e5"/>`);
      out.push(`<text x="${LEFT - 6}" y="${fmt(y(tick) + 4)}" text-anchor="end" fill="#555555">${tick}</text>`);
    }
    for (const p of input.phases.slice(1)) {
      out.push(`<line x1="${fmt(x(p.atMs))}" y1="${top}" x2="${fmt(x(p.atMs))}" y2="${top + PANEL}" stroke="#999999" stroke-dasharray="4 3"/>`);
    }
    const secondsStep = niceCeiling(input.durationMs / 1000 / 8);
    for (let s = 0; s * 1000 <= input.durationMs; s += secondsStep) {
      out.push(`<text x="${fmt(x(s * 1000))}" y="${top + PANEL + 16}" text-anchor="middle" fill="#555555">${s} s</text>`);
    }
    out.push(`<rect x="${LEFT}" y="${top}" width="${plotWidth}" height="${PANEL}" fill="none" stroke="#888888"/>`);
    out.push(`<text x="${LEFT}" y="${top - (panel.note ? 24 : 8)}" font-size="14" font-weight="bold">${escape(panel.label)}</text>`);
    if (panel.note) out.push(`<text class="note" x="${LEFT}" y="${top - 8}" fill="#333333">${escape(panel.note)}</text>`);
    // One tick per pixel column however many calls failed there.
    const failed = new Set((panel.failuresAtMs ?? []).filter((ms) => ms >= 0 && ms <= input.durationMs).map((ms) => fmt(x(ms))));
    for (const fx of failed) out.push(`<line class="failure" x1="${fx}" y1="${top + PANEL - 10}" x2="${fx}" y2="${top + PANEL}" stroke="${FAILED}" stroke-width="1.5"/>`);
    if (panel.failuresAtMs?.length) {
      const ly = top + 14 + panel.series.length * 18;
      out.push(`<line x1="${LEFT + plotWidth + 24}" y1="${ly - 10}" x2="${LEFT + plotWidth + 24}" y2="${ly}" stroke="${FAILED}" stroke-width="2"/>`);
      out.push(`<text x="${LEFT + plotWidth + 40}" y="${ly}">failed call</text>`);
    }
    out.push(`<text x="${LEFT - 48}" y="${top + PANEL / 2}" transform="rotate(-90 ${LEFT - 48} ${top + PANEL / 2})" text-anchor="middle" fill="#555555">requests/s</text>`);
    panel.series.forEach((values, i) => {
      const name = input.apiservers[i] ?? `apiserver-${i + 1}`;
      const color = COLORS[i % COLORS.length]!;
      const points = values.map((v, w) => `${fmt(x((w + 0.5) * input.stepMs))},${fmt(y(v))}`).join(' ');
      out.push(
        `<polyline class="series" data-client="${escape(panel.label)}" data-apiserver="${escape(name)}" fill="none" stroke="${color}" stroke-width="2" stroke-linejoin="round" points="${points}"/>`,
      );
      const ly = top + 14 + i * 18;
      out.push(`<line x1="${LEFT + plotWidth + 14}" y1="${ly - 4}" x2="${LEFT + plotWidth + 34}" y2="${ly - 4}" stroke="${color}" stroke-width="3"/>`);
      out.push(`<text x="${LEFT + plotWidth + 40}" y="${ly}">${escape(name)}</text>`);
    });
    out.push('</g>');
  });
  out.push('</svg>', '');
  return out.join('\n');
}

/**
 * Each label in the first row where it clears the one before it there, moved left where it would
 * run off the right edge: nine apiservers' restarts are 5 % of the width apart, each label 40 %.
 */
function labelRows(labels: ReadonlyArray<{ x: number; text: string }>): Array<{ x: number; row: number; text: string }> {
  const ends: number[] = [];
  return labels.map(({ x, text }) => {
    const width = text.length * LABEL_CHAR_PX;
    const at = Math.max(0, Math.min(x, WIDTH - 4 - width));
    let row = ends.findIndex((end) => at >= end + LABEL_GAP);
    if (row === -1) row = ends.push(0) - 1;
    ends[row] = at + width;
    return { x: at, row, text };
  });
}

/** 1, 2 or 5 times a power of ten, at least `v`. */
function niceCeiling(v: number): number {
  const power = 10 ** Math.floor(Math.log10(Math.max(v, 1e-9)));
  for (const m of [1, 2, 5, 10]) if (m * power >= v) return m * power;
  return 10 * power;
}

function ticks(max: number): number[] {
  const step = niceCeiling(max / 5);
  const out: number[] = [];
  for (let t = 0; t <= max + 1e-9; t += step) out.push(Math.round(t * 100) / 100);
  return out;
}

function fmt(n: number): string {
  return String(Math.round(n * 10) / 10);
}

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);
}
