import type { WriteStream } from 'node:tty';
import { CLIENT_KEYS, type Snapshot, type View } from './snapshot.ts';
import { seconds } from './seconds.ts';

const ESC = '\x1b[';
const RECENT_EVENTS = 5;
const BAR = 10;

/**
 * The live view on a terminal: one frame redrawn in place, a progress bar over the phases, a row
 * per apiserver with each client's requests/s, in-flight requests, open watches and how it sees
 * that apiserver, and the latest events.
 */
export class TerminalView implements View {
  readonly #out: WriteStream;
  readonly #color: boolean;
  #lines = 0;
  #peak = 1;
  #closed = false;

  constructor(out: WriteStream) {
    this.#out = out;
    this.#color = !process.env.NO_COLOR && out.hasColors?.() !== false;
    out.write(`${ESC}?25l`); // hide the cursor while redrawing
  }

  update(s: Snapshot): void {
    const width = Math.max(40, this.#out.columns || 100);
    const frame = this.#frame(s, width >= 118).map((line) => fit(line, width - 1));
    const up = this.#lines > 0 ? `${ESC}${this.#lines}F` : '';
    this.#out.write(up + frame.map((l) => `${ESC}2K${l}`).join('\n') + '\n');
    this.#lines = frame.length;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#out.write(`${ESC}?25h`);
  }

  #frame(s: Snapshot, bars: boolean): string[] {
    const phase = s.phases[s.phase]!;
    const done = Math.min(1, s.elapsedMs / s.durationMs);
    const progress = 30;
    const filled = Math.round(done * progress);
    const marks: string[] = Array.from({ length: progress }, (_, i) => (i < filled ? '█' : '░'));
    // Phase boundaries as ticks on the bar.
    for (const p of s.phases.slice(1)) {
      const at = Math.min(progress - 1, Math.round((p.atMs / s.durationMs) * progress));
      if (at >= filled) marks[at] = '┆';
    }
    for (const row of s.rows) for (const k of CLIENT_KEYS) this.#peak = Math.max(this.#peak, row.clients[k].rate);

    const col = (text: string, n: number, right = false): string => (right ? text.padStart(n) : text.padEnd(n));
    const clientHeader = (label: string): string => col(label, 9 + 7 + (bars ? BAR + 1 : 0) + 10 + 8);
    const lines = [
      this.#bold('kube-balancer demo') + `  phase ${s.phase + 1}/${s.phases.length}: ${phase.title}`,
      `[${marks.join('')}] ${seconds(s.elapsedMs)} / ${seconds(s.durationMs)}`,
      '',
      `${' '.repeat(26)}${clientHeader(s.labels.kubeBalancer)}  ${clientHeader(s.labels.oneConnection)}`,
      `${col('apiserver', 13)}${col('server', 13)}` +
        CLIENT_KEYS.map(() => `${col('state', 9)}${col('req/s', 7, true)}${bars ? ' '.repeat(BAR + 1) : ''}${col('in-flight', 10, true)}${col('watches', 8, true)}`).join('  '),
    ];
    for (const row of s.rows) {
      const cells = CLIENT_KEYS.map((k) => {
        const c = row.clients[k];
        const bar = bars ? ` ${col(meter(c.rate / this.#peak, BAR), BAR)}` : '';
        return `${this.#state(col(c.state, 9))}${col(c.rate.toFixed(1), 7, true)}${bar}${col(String(c.inFlight), 10, true)}${col(String(c.watches), 8, true)}`;
      });
      lines.push(`${col(row.name, 13)}${this.#state(col(row.server, 13))}${cells.join('  ')}`);
    }
    lines.push('', `kube-balancer retried ${s.retries} request${s.retries === 1 ? '' : 's'} on another apiserver`);
    const recent = s.events.slice(-RECENT_EVENTS);
    for (let i = 0; i < RECENT_EVENTS; i++) {
      const e = recent[i];
      lines.push(e ? `${seconds(e.atMs).padStart(7)}  ${e.text}` : '');
    }
    return lines;
  }

  #bold(text: string): string {
    return this.#color ? `${ESC}1m${text}${ESC}22m` : text;
  }

  #state(cell: string): string {
    if (!this.#color) return cell;
    const word = cell.trim();
    const code = ['running', 'ready', 'pinned'].includes(word) ? 32 : ['crashed', 'ejected', 'stopped'].includes(word) ? 31 : word === '-' ? 2 : 33;
    return `${ESC}${code}m${cell}${ESC}0m`;
  }
}

/** A horizontal bar in eighths of a cell. */
function meter(fraction: number, cells: number): string {
  const eighths = Math.round(Math.max(0, Math.min(1, fraction)) * cells * 8);
  return '█'.repeat(Math.floor(eighths / 8)) + (eighths % 8 ? '▏▎▍▌▋▊▉'[(eighths % 8) - 1] : '');
}

/** Cuts a line to `width` visible characters (ANSI codes do not count), so it never wraps and breaks the redraw. */
function fit(line: string, width: number): string {
  // eslint-disable-next-line no-control-regex -- ANSI escape sequences
  const visible = line.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '');
  if (visible.length <= width) return line;
  return visible.slice(0, width);
}
