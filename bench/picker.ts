// Cost of one pick: ns per pick and bytes allocated per pick, at N = 3, 10, 100, 1000 endpoints, for
// each policy and for each scheduling algorithm considered. Targets: <= 50 ns at N <= 10, <= 150 ns at
// N = 1000, 0 bytes per pick.
//
// Every case runs in its own child process, so V8 sees one picker class at a time as in a real
// process (mixing them in one isolate makes the call sites polymorphic and every number worse).
//
// Time: picks in rounds of BENCH_MS (150) ms after a warm-up, median of BENCH_ROUNDS (5) rounds,
// both by the wall clock and by the process's CPU time (process.cpuUsage), which does not count the
// time the process waits for a core while other work runs: the steadier figure on a shared machine.
//
// Allocation: gc() (exposed at run time through v8.setFlagsFromString), then used_heap_size before
// and after ALLOC_PICKS picks. New objects stay on the young-generation heap until a collection, so
// the difference is what the picks allocated, provided no GC ran in between: v8.GCProfiler counts
// the collections during the run and the table shows that count next to the figure.
import { fork } from 'node:child_process';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { systemClock, type Clock } from '../src/clock.ts';
import type { Endpoint } from '../src/balancer/Endpoint.ts';
import { EndpointSet, SMOOTH_MAX_CANDIDATES } from '../src/balancer/EndpointSet.ts';
import type { Picker, PickRequest, Policy } from '../src/balancer/Picker.ts';
import { SchedulePicker } from '../src/balancer/SchedulePicker.ts';
import { defaultOptions } from '../src/options/BalancerOptions.ts';
import { EarliestDeadline } from '../src/balancer/schedule/EarliestDeadline.ts';
import { SmoothWeighted } from '../src/balancer/schedule/SmoothWeighted.ts';
import { address, candidatesOf, endpoint } from '../test/helpers/endpoints.ts';
import { median, table, writeResults } from './lib.ts';

const SIZES = process.env.BENCH_SIZES?.split(",").map(Number) ?? [3, 10, 100, 1000];
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const ROUND_MS = Number(process.env.BENCH_MS ?? 150);
const ALLOC_PICKS = 100_000;

type Weights = 'equal' | 'mixed';
type Algorithm =
  | 'auto' // what EndpointSet chooses: the production path
  | 'swrr'
  | 'edf'
  | 'auto/ramping' // every endpoint in slow start: weights read from the clock at each pick
  | 'auto/long-running' // watches: fewest open streams
  | 'ref/plain-rr' // references, not shipped: the foundation's rotation,
  | 'ref/stride' // grpc-go's static stride scheduler,
  | 'ref/random'; // and RFC 2782-style weighted random per request

interface Case {
  algorithm: Algorithm;
  policy: Policy;
  n: number;
  weights: Weights;
}

interface Result extends Case {
  /** Median over the rounds, of wall time. */
  nsPerPick: number;
  /**
   * Median over the rounds, of this process's CPU time: time the process spent descheduled while
   * other work ran on the machine does not count, so this is the steadier figure on a shared host.
   */
  nsCpu: number;
  /** Fastest round: on a shared machine, the figure least disturbed by other processes. */
  nsBest: number;
  bytesPerPick: number;
  gcs: number;
}

/** Weights 1..10 in a fixed pattern, so every run measures the same set. */
function weightOf(i: number, weights: Weights): number {
  return weights === 'equal' ? 1 : 1 + ((i * 7) % 10);
}

const pickerDefaults = { slowStartMs: defaultOptions.slowStartMs, panicThreshold: defaultOptions.panicThreshold };

const weightsOf = (n: number, weights: Weights): number[] => Array.from({ length: n }, (_, i) => weightOf(i, weights));

/** A picker for the case, and the request it is asked with. */
function build(c: Case, clock: Clock): { picker: Picker; request: PickRequest } {
  const request: PickRequest = { longRunning: c.algorithm === 'auto/long-running' };
  if (c.algorithm === 'auto' || c.algorithm === 'auto/long-running') {
    const set = new EndpointSet(clock, { ...pickerDefaults, policy: c.policy });
    set.update(weightsOf(c.n, c.weights).map((weight, i) => address(i, { weight })));
    return { picker: set, request };
  }
  if (c.algorithm === 'auto/ramping') {
    const set = new EndpointSet(clock, { ...pickerDefaults, policy: c.policy, slowStartMs: 1e12 });
    set.update([{ address: '192.0.2.1', port: 6443 }]); // the first set does not ramp; the rest do
    set.update(weightsOf(c.n, c.weights).map((weight, i) => address(i, { weight })));
    return { picker: set, request };
  }
  if (c.algorithm === 'swrr' || c.algorithm === 'edf') {
    const candidates = candidatesOf(weightsOf(c.n, c.weights), {}, clock);
    const schedule = c.algorithm === 'swrr' ? new SmoothWeighted(candidates) : new EarliestDeadline(candidates);
    return { picker: new SchedulePicker(candidates, schedule, c.policy), request };
  }
  const list = weightsOf(c.n, c.weights).map((weight, i) => endpoint(i, { weight }));
  if (c.algorithm === 'ref/plain-rr') return { picker: plainRoundRobin(list), request };
  if (c.algorithm === 'ref/stride') return { picker: staticStride(list), request };
  return { picker: weightedRandom(list), request };
}

function plainRoundRobin(list: Endpoint[]): Picker {
  let next = Math.floor(Math.random() * list.length);
  return {
    pick: () => {
      const i = next % list.length;
      next = i + 1;
      return list[i];
    },
  };
}

/** grpc-go balancer/weightedroundrobin/scheduler.go: weights scaled to 16 bits, one counter. */
function staticStride(list: Endpoint[]): Picker {
  const max = Math.max(...list.map((e) => e.weight));
  const scaled = Int32Array.from(list.map((e) => Math.max(1, Math.round((e.weight / max) * 65535))));
  const n = list.length;
  // grpc-go's counter is a uint32; 30 bits keep it a small integer in V8, so it is not boxed.
  let counter = Math.floor(Math.random() * 0x3fffffff);
  return {
    pick: () => {
      for (;;) {
        const idx = counter;
        counter = (counter + 1) & 0x3fffffff;
        const backend = idx % n;
        const generation = Math.floor(idx / n);
        const weight = scaled[backend]!;
        if ((weight * generation + backend * 32767) % 65535 >= 65535 - weight) return list[backend];
      }
    },
  };
}

/** Per-request weighted random (what a literal RFC 2782 reading does): binary search on prefix sums. */
function weightedRandom(list: Endpoint[]): Picker {
  const prefix = new Float64Array(list.length);
  let sum = 0;
  list.forEach((e, i) => (prefix[i] = sum += e.weight));
  return {
    pick: () => {
      const r = Math.random() * sum;
      let lo = 0;
      let hi = prefix.length - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (prefix[mid]! > r) hi = mid;
        else lo = mid + 1;
      }
      return list[lo];
    },
  };
}

function runCase(c: Case): Result {
  v8.setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const { picker, request } = build(c, systemClock);
  // A small-integer checksum keeps the picks observable without boxing a number per pick.
  let sink = 0;
  const loop = (picks: number): void => {
    let sum = 0;
    for (let k = 0; k < picks; k++) sum = (sum + picker.pick(request)!.port) | 0;
    sink = (sink + sum) | 0;
  };
  // Warm up until the optimising compiler has had its go.
  const warmupEnd = performance.now() + 100;
  while (performance.now() < warmupEnd) loop(1000);
  const rounds: number[] = [];
  const cpuRounds: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    let picks = 0;
    const start = performance.now();
    const cpuStart = process.cpuUsage();
    let elapsed = 0;
    while (elapsed < ROUND_MS) {
      loop(1000);
      picks += 1000;
      elapsed = performance.now() - start;
    }
    const cpu = process.cpuUsage(cpuStart);
    rounds.push((elapsed * 1e6) / picks);
    cpuRounds.push(((cpu.user + cpu.system) * 1e3) / picks);
  }
  // The same measurement around zero picks gives what the measuring itself allocates.
  const allocated = (picks: number): { bytes: number; gcs: number } => {
    gc();
    const profiler = new v8.GCProfiler();
    profiler.start();
    const before = v8.getHeapStatistics().used_heap_size;
    loop(picks);
    const after = v8.getHeapStatistics().used_heap_size;
    return { bytes: after - before, gcs: profiler.stop()?.statistics.length ?? 0 };
  };
  const overhead = allocated(0);
  const { bytes, gcs } = allocated(ALLOC_PICKS);
  if (sink === 0.5) console.log(sink);
  return { ...c, nsPerPick: median(rounds), nsCpu: median(cpuRounds), nsBest: Math.min(...rounds), bytesPerPick: Math.max(0, bytes - overhead.bytes) / ALLOC_PICKS, gcs };
}

/** `BENCH_ONLY=edf,swrr` limits the run to algorithms whose name contains one of the words. */
function cases(): Case[] {
  const only = process.env.BENCH_ONLY?.split(',');
  return allCases().filter((c) => !only || only.some((word) => c.algorithm.includes(word)));
}

function allCases(): Case[] {
  const list: Case[] = [];
  for (const n of SIZES) {
    for (const weights of ['equal', 'mixed'] as const) {
      for (const policy of ['round-robin', 'least-request'] as const) {
        for (const algorithm of ['auto', 'swrr', 'edf'] as const) list.push({ algorithm, policy, n, weights });
      }
      list.push({ algorithm: 'auto/ramping', policy: 'round-robin', n, weights });
      list.push({ algorithm: 'auto/long-running', policy: 'round-robin', n, weights });
      if (weights === 'equal') list.push({ algorithm: 'ref/plain-rr', policy: 'round-robin', n, weights });
      list.push({ algorithm: 'ref/stride', policy: 'round-robin', n, weights });
      list.push({ algorithm: 'ref/random', policy: 'round-robin', n, weights });
    }
  }
  return list;
}

function inChild(c: Case): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = fork(import.meta.filename, ['--case', JSON.stringify(c)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.once('message', (message) => resolve(message as Result));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? undefined : reject(new Error(`case ${JSON.stringify(c)} exited with ${code}`))));
  });
}

export async function run(): Promise<unknown> {
  const results: Result[] = [];
  for (const c of cases()) results.push(await inChild(c));
  const rows = results.map((r) => ({
    algorithm: r.algorithm,
    policy: r.policy,
    N: r.n,
    weights: r.weights,
    'ns/pick CPU': Number(r.nsCpu.toFixed(1)),
    'ns/pick wall': Number(r.nsPerPick.toFixed(1)),
    'best round wall': Number(r.nsBest.toFixed(1)),
    'bytes/pick': Number(r.bytesPerPick.toFixed(2)),
    'GCs during alloc run': r.gcs,
  }));
  console.log('picker: ns and bytes per pick (targets: <= 50 ns at N <= 10, <= 150 ns at N = 1000, 0 bytes)');
  console.log(`'auto' is what the balancer uses: SWRR up to ${SMOOTH_MAX_CANDIDATES} endpoints, EDF above.`);
  console.log(table(rows));
  return { rows: results };
}

if (import.meta.main) {
  if (process.argv[2] === '--case') {
    process.send!(runCase(JSON.parse(process.argv[3]!) as Case), () => process.disconnect());
  } else {
    writeResults('picker', await run());
  }
}
