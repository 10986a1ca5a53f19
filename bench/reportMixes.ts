// BENCHMARKS.md's section on issue 27's request mixes, from `BENCH_MIXES=1 npm run bench -- compare`
// runs kept in bench/runs/ (`mixes-*.json`).
import type { Row } from './compare.ts';
import { median, type Machine } from './lib.ts';

export interface MixesRun {
  startedAt: string;
  machine: Machine;
  rounds: number;
  rows: Row[];
}

const MIXES: Array<[string, string]> = [
  ['slow', 'GETs of one object'],
  ['slow-mixed', 'half GETs of one object; LISTs, writes, discovery'],
  ['slow-lists', 'LISTs only'],
  ['slow-discovery', 'discovery GETs only (`/api`)'],
];
const KB = 'kube-balancer';
const POOL = 'undici Pool (one server)';
const AGAIN = 'undici Pool again (A/A)';
const SATURATED = [KB, 'kube-balancer least-request', 'haproxy http leastconn', 'haproxy http roundrobin'];

export function mixesSection(runs: MixesRun[]): string[] {
  if (runs.length === 0) return [];
  const lines = [
    '## Request mixes (issue 27): every short request teaches the weights',
    '',
    'The weights learn from every short request: GETs of one object by their latency, LISTs, writes and',
    'discovery GETs each against the same kind of request on the other apiservers, and the requests in',
    'flight everywhere (watches never count). A slow answer moves nothing alone (the estimate follows the',
    'median of the last answers); a real slowdown moves the weights within a second, and an apiserver that',
    'is fast again is back within ~10 s, within seconds when copies re-measure it. With hedging on (the',
    'default) a GET, LIST or discovery GET that picked an apiserver 2.5× slower than the fastest goes elsewhere',
    'while a copy measures it; with hedging off, or for writes, a caller\'s request tries it again ever more',
    'rarely: every ~2 s at first, every ~6 s after half a minute. Details: [docs/load-weights.md](docs/load-weights.md).',
    '',
    '`BENCH_MIXES=1 BENCH_ROUNDS=3 npm run bench -- compare`: the slow set-up (20/20/100 ms, 4 at once each)',
    'with four request mixes, saturated (64 at once: throughput ÷ the capacities, target ≥ 0.95) and light',
    '(110 requests a second for 10 s: p99, target within 1.1× of a Pool\'s to one fast server in the same',
    'round, the machine\'s own floor). The clients of a mix run in turn, round after round.',
    `Runs: ${runs.map((run, k) => `${k + 1} at ${run.startedAt} (load ${run.machine.loadavg[0]})`).join('; ')}.`,
    '',
    '| run·round | requests | kube-balancer | least-request | haproxy leastconn | haproxy roundrobin | light p99 ms, kube-balancer | light p99 ms, Pool | ÷ Pool | A/A: the Pool again ÷ Pool |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  /** Per mix, per run: the rounds' light p99 ÷ the Pool's (each run is one build, so runs are not pooled). */
  const ratios = new Map<string, number[][]>();
  const floors = new Map<string, number[][]>();
  const over = (a: Row | undefined, b: Row | undefined): number | undefined => (a && b ? Math.round((a.p99 / b.p99) * 100) / 100 : undefined);
  const add = (map: Map<string, number[][]>, label: string, run: number, value: number | undefined): void => {
    if (value === undefined) return;
    const runs = map.get(label) ?? [];
    (runs[run] ??= []).push(value);
    map.set(label, runs);
  };
  runs.forEach((run, k) => {
    for (let round = 0; round < run.rounds; round++) {
      const row = (scenario: string, client: string): Row | undefined => run.rows.filter((r) => r.scenario === scenario && r.client === client)[round];
      for (const [scenario, label] of MIXES) {
        const kb = row(`${scenario}-light`, KB);
        const pool = row(`${scenario}-light`, POOL);
        const ratio = over(kb, pool);
        const floor = over(row(`${scenario}-light`, AGAIN), pool);
        add(ratios, label, k, ratio);
        add(floors, label, k, floor);
        const saturated = SATURATED.map((client) => row(scenario, client)?.throughput ?? '–').join(' | ');
        lines.push(`| ${k + 1}·${round + 1} | ${label} | ${saturated} | ${kb?.p99 ?? '–'} | ${pool?.p99 ?? '–'} | ${ratio ?? '–'} | ${floor ?? '–'} |`);
      }
    }
  });
  const summary = (values: number[]): string => `${median(values).toFixed(2)} (${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}, ${values.length} round${values.length === 1 ? '' : 's'})`;
  const perRun = (runsOf: number[][]): string => runsOf.flatMap((values, k) => (values ? [`run ${k + 1} ${summary(values)}`] : [])).join(', ');
  lines.push('', 'Light p99 ÷ the Pool\'s, per run: median over its rounds (range); and the A/A pair\'s, the floor\'s own spread:', '');
  for (const [label, runsOf] of ratios) lines.push(`- ${label}: ${perRun(runsOf)}${floors.has(label) ? `; A/A ${perRun(floors.get(label)!)}` : ''}`);
  return [...lines, ''];
}
