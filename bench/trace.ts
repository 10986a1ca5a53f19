// BENCH_TRACE=1: where a scenario's tail comes from. For each cell it prints the slowest 1 % of the
// requests (and a few more) with when they started, which server answered and how long that server
// held them (bench/server.ts's `x-served`), and the garbage collections and event-loop delay of
// this process around them; then per-server request counts. Decides whether a tail is the picker's
// (requests on the slow server), ours (GC, a blocked loop) or the machine's (a fast server's own
// 20-ms timer stretched, which hits a plain Pool alike).
import os from 'node:os';
import { PerformanceObserver, monitorEventLoopDelay, type IntervalHistogram, type PerformanceEntry } from 'node:perf_hooks';

export interface Sample {
  /** performance.now() when the request was sent. */
  at: number;
  ms: number;
  ok: boolean;
  /** The `x-served` header: server address and its own time in ms; empty for a failure. */
  served: string;
}

export class Trace {
  readonly #label: string;
  #start = 0;
  readonly #gcs: PerformanceEntry[] = [];
  #observer: PerformanceObserver | undefined;
  #delay: IntervalHistogram | undefined;
  #weights: string[] = [];
  #tick: NodeJS.Timeout | undefined;

  constructor(label: string) {
    this.#label = label;
  }

  /** `weights`: the balancer's load factors and estimates, read every 500 ms. */
  begin(start: number, weights?: () => string): void {
    this.#start = start;
    if (weights) {
      this.#weights.push(`0.0 s ${weights()}`);
      this.#tick = setInterval(() => this.#weights.push(`${((performance.now() - start) / 1000).toFixed(1)} s ${weights()}`), 500);
    }
    this.#observer = new PerformanceObserver((list) => this.#gcs.push(...list.getEntries()));
    this.#observer.observe({ entryTypes: ['gc'] });
    this.#delay = monitorEventLoopDelay({ resolution: 5 });
    this.#delay.enable();
  }

  end(samples: readonly Sample[]): void {
    this.#observer?.disconnect();
    clearInterval(this.#tick);
    this.#delay?.disable();
    const delay = this.#delay;
    const sorted = [...samples].sort((a, b) => b.ms - a.ms);
    const shown = sorted.slice(0, Math.max(6, Math.ceil(samples.length / 100) + 3));
    const byServer = new Map<string, number>();
    for (const s of samples) {
      const server = s.served.split(' ')[0] || 'failed';
      byServer.set(server, (byServer.get(server) ?? 0) + 1);
    }
    const gcMs = this.#gcs.reduce((sum, e) => sum + e.duration, 0);
    const gcMax = this.#gcs.reduce((max, e) => Math.max(max, e.duration), 0);
    const lines = [
      `trace ${this.#label}: ${samples.length} requests, load ${os.loadavg().map((x) => x.toFixed(2)).join('/')}, ` +
        `loop delay p99 ${delay ? (delay.percentile(99) / 1e6).toFixed(1) : '-'} max ${delay ? (delay.max / 1e6).toFixed(1) : '-'} ms, ` +
        `gc ${this.#gcs.length}× ${gcMs.toFixed(1)} ms (max ${gcMax.toFixed(1)}), by server ${[...byServer].map(([k, v]) => `${k}:${v}`).join(' ')}`,
      ...shown.map((s, rank) => {
        const gc = this.#gcs.filter((e) => e.startTime < s.at + s.ms && e.startTime + e.duration > s.at).reduce((sum, e) => sum + e.duration, 0);
        return `  #${rank + 1} at ${((s.at - this.#start) / 1000).toFixed(3)} s  ${s.ms.toFixed(1)} ms  ${s.ok ? '' : 'FAILED '}served ${s.served || '-'}${gc > 0 ? `  gc ${gc.toFixed(1)} ms` : ''}`;
      }),
    ];
    if (this.#weights.length > 0) lines.push(`  load factor@latency ms: ${this.#weights.join(' | ')}`);
    console.log(lines.join('\n'));
  }
}
