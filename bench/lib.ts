import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { pathToFileURL } from 'node:url';
import type { createBalancer } from '../src/index.ts';

export interface RunResult {
  requests: number;
  seconds: number;
  rps: number;
  p50Us: number;
  p99Us: number;
  /**
   * This process's CPU time (user + system, `process.cpuUsage`) per request, µs. With the server in
   * another process it is the client's own cost, and on a shared machine far steadier than `rps`.
   */
  cpuUs: number;
}

/**
 * Sends requests with `concurrency` workers for `ms` milliseconds (after `warmupMs`) and measures
 * throughput and latency. Bounded in time, and in count by `maxRequests`.
 */
export async function measure(
  send: () => Promise<void>,
  { concurrency, ms, warmupMs = 300, maxRequests = 2_000_000 }: { concurrency: number; ms: number; warmupMs?: number; maxRequests?: number },
): Promise<RunResult> {
  const warmupEnd = performance.now() + warmupMs;
  const end = warmupEnd + ms;
  const latencies: number[] = [];
  let count = 0;
  let cpuStart: NodeJS.CpuUsage | undefined;
  /** Requests completed between the start of the CPU measurement and its end (warm-up excluded). */
  let cpuCount = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const start = performance.now();
      if (start >= end || count >= maxRequests) return;
      await send();
      const done = performance.now();
      if (start >= warmupEnd) {
        count++;
        latencies.push(done - start);
      }
      if (cpuStart === undefined && done >= warmupEnd) cpuStart = process.cpuUsage();
      else if (cpuStart !== undefined) cpuCount++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const cpu = process.cpuUsage(cpuStart);
  latencies.sort((a, b) => a - b);
  const pct = (p: number): number => Math.round(percentile(latencies, p) * 1000);
  const cpuUs = Math.round(((cpu.user + cpu.system) / Math.max(1, cpuCount)) * 100) / 100;
  return { requests: count, seconds: ms / 1000, rps: Math.round(count / (ms / 1000)), p50Us: pct(0.5), p99Us: pct(0.99), cpuUs };
}

/**
 * Measures two ways of doing the same thing, `base` first, in alternating rounds so drift on a busy
 * machine hits both alike. Returns the medians as a table row (ratio: the second's throughput over
 * the first's) and every run.
 */
export async function compare(
  contenders: Record<string, () => Promise<void>>,
  { rounds, concurrency, ms, unit = 'rps' }: { rounds: number; concurrency: number; ms: number; unit?: string },
): Promise<{ row: Record<string, number>; runs: Record<string, RunResult[]> }> {
  const entries = Object.entries(contenders);
  const runs = Object.fromEntries(entries.map(([name]) => [name, [] as RunResult[]]));
  for (let round = 0; round < rounds; round++) {
    for (const [name, send] of entries) runs[name]!.push(await measure(send, { concurrency, ms }));
  }
  const names = entries.map(([name]) => name);
  const mid = (name: string, key: 'rps' | 'p50Us' | 'p99Us' | 'cpuUs'): number => median(runs[name]!.map((r) => r[key]));
  const [base = '', other = ''] = names;
  return {
    row: {
      ...Object.fromEntries(names.map((n) => [`${n} ${unit}`, mid(n, 'rps')])),
      ratio: Number((mid(other, 'rps') / mid(base, 'rps')).toFixed(3)),
      ...Object.fromEntries(names.map((n) => [`${n} CPU µs/req`, mid(n, 'cpuUs')])),
      // The second's CPU per request over the first's: the steadier overhead figure.
      'CPU ratio': Number((mid(other, 'cpuUs') / mid(base, 'cpuUs')).toFixed(3)),
      ...Object.fromEntries(names.map((n) => [`${n} p50 µs`, mid(n, 'p50Us')])),
      ...Object.fromEntries(names.map((n) => [`${n} p99 µs`, mid(n, 'p99Us')])),
    },
    runs,
  };
}

/** The `p` quantile (0..1) of values sorted ascending, nearest rank; 0 when there are none. */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

export interface ServerProcess {
  port: number;
  child: ChildProcess;
  /** Sends a control message (`{ serviceMs }`, `{ drain: true }`; see bench/server.ts). */
  send: (message: object) => void;
  stop: () => Promise<void>;
}

/**
 * Starts bench/server.ts in a child process and returns its port and a stop function. `port` 0 is
 * any free port; `slots` > 0 makes it capacity-bound, each request taking `serviceMs`.
 */
export async function startServerProcess(host: string, protocol: 'h1' | 'h2', { port = 0, slots = 0, serviceMs = 0 } = {}): Promise<ServerProcess> {
  const child: ChildProcess = fork(join(import.meta.dirname, 'server.ts'), [host, protocol, String(port), String(slots), String(serviceMs)], {
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  const [chunk] = (await once(child.stdout!, 'data')) as [Buffer];
  const line = chunk.toString().trim();
  if (line.startsWith('error')) {
    await once(child, 'exit');
    throw Object.assign(new Error(`bench server on ${host}:${port}: ${line}`), { code: line.slice(6) });
  }
  return {
    port: Number(line),
    child,
    send: (message) => void child.send(message),
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGCONT'); // a black hole is a stopped process, which would not see SIGTERM
      child.kill();
      await once(child, 'exit');
    },
  };
}

/** Writes a benchmark's figures to bench/results/<name>.json. */
export function writeResults(name: string, data: unknown): string {
  const dir = join(import.meta.dirname, 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}.json`);
  writeFileSync(file, `${JSON.stringify({ name, date: new Date().toISOString(), node: process.version, ...(data as object) }, null, 2)}\n`);
  return file;
}

/** The machine a run measured on, as BENCHMARKS.md's runs tables list it. */
export interface Machine {
  cpu: string;
  cores: number;
  node: string;
  loadavg: number[];
}

export function machine(): Machine {
  const cpus = os.cpus();
  return { cpu: cpus[0]?.model ?? 'unknown', cores: cpus.length, node: process.version, loadavg: os.loadavg().map((x) => Math.round(x * 100) / 100) };
}

/** Keeps a run in bench/runs/ (committed) as `<name>-<startedAt>.json`, for `npm run bench:report`; returns the file. */
export function keepRun(name: string, startedAt: string, run: object): string {
  const dir = join(import.meta.dirname, 'runs');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}-${startedAt.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify({ name, ...run }, null, 2)}\n`);
  return file;
}

export function table(rows: Array<Record<string, string | number>>): string {
  const keys = Object.keys(rows[0] ?? {});
  const widths = keys.map((k) => Math.max(k.length, ...rows.map((r) => String(r[k]).length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padStart(widths[i] ?? 0)).join('  ');
  return [line(keys), ...rows.map((r) => line(keys.map((k) => String(r[k]))))].join('\n');
}

/** Another build's `createBalancer` (`<another checkout>/src/index.ts`), to measure it beside this one in the same process and rounds. */
export async function importBuild(indexTs: string): Promise<{ createBalancer: typeof createBalancer }> {
  return (await import(pathToFileURL(indexTs).href)) as { createBalancer: typeof createBalancer };
}
