import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';

export interface RunResult {
  requests: number;
  seconds: number;
  rps: number;
  p50Us: number;
  p99Us: number;
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
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  latencies.sort((a, b) => a - b);
  const pct = (p: number): number => Math.round((latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? 0) * 1000);
  return { requests: count, seconds: ms / 1000, rps: Math.round(count / (ms / 1000)), p50Us: pct(0.5), p99Us: pct(0.99) };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/** Starts bench/server.ts in a child process and returns its port and a stop function. */
export async function startServerProcess(host: string, protocol: 'h1' | 'h2'): Promise<{ port: number; stop: () => Promise<void> }> {
  const child: ChildProcess = fork(join(import.meta.dirname, 'server.ts'), [host, protocol], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  const [chunk] = (await once(child.stdout!, 'data')) as [Buffer];
  const port = Number(chunk.toString().trim());
  return {
    port,
    stop: async () => {
      if (child.exitCode !== null) return;
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

export function table(rows: Array<Record<string, string | number>>): string {
  const keys = Object.keys(rows[0] ?? {});
  const widths = keys.map((k) => Math.max(k.length, ...rows.map((r) => String(r[k]).length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padStart(widths[i] ?? 0)).join('  ');
  return [line(keys), ...rows.map((r) => line(keys.map((k) => String(r[k]))))].join('\n');
}
