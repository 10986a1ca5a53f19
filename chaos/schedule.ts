// Fault schedules drawn from a seed: schedule K of seed S is the same list of faults on every run, so
// a failing one is replayed by `npm run chaos -- --seed S --schedule K`.
import { seeded, type Random } from '../fleet/sim/random.ts';

export const FAULT_KINDS = [
  'crash',
  'crash-mid-response',
  'black-hole',
  'slow-readyz',
  'slow-all',
  'trickle-body',
  'endless-body',
  'storm-503',
  'storm-429',
  'goaway-storm',
  'rst-mid-stream',
  'rolling-restart-503',
  'rolling-restart-429',
  'apf-saturation',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** Kinds after which the apiserver still serves every request within its normal latency. */
export const SERVING_KINDS: ReadonlySet<FaultKind> = new Set(['slow-readyz', 'goaway-storm']);

export interface Fault {
  kind: FaultKind;
  /** Index of the instance hit; `all` for every one (a rolling restart always takes them in turn). */
  target: number | 'all';
  /** From the workload's start. */
  startMs: number;
  durationMs: number;
  /** Kind-specific: latency, byte gap, fraction, `Retry-After` text. */
  params: Record<string, string | number | undefined>;
}

export interface Schedule {
  seed: number;
  index: number;
  faults: Fault[];
}

/** How long the workload runs; faults start inside it. */
export const WORKLOAD_MS = 3_000;
export const INSTANCES = 3;
/** ConfigMaps `pre-0`… in `default`, made before the workload: what its GETs and patches name. */
export const PRECREATED = 20;

/** `Retry-After` values a client must survive: zero, negative, huge, an HTTP date, garbage, none. */
const RETRY_AFTERS = ['0', '-1', '86400', '1', 'Wed, 21 Oct 2015 07:28:00 GMT', 'soon', '2.5', undefined];

function pick<T>(random: Random, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)]!;
}

function int(random: Random, from: number, to: number): number {
  return from + Math.floor(random() * (to - from + 1));
}

function params(random: Random, kind: FaultKind): Fault['params'] {
  switch (kind) {
    case 'slow-readyz':
      return { delayMs: pick(random, [1_200, 1_500, 3_000]) };
    case 'slow-all':
      return { latencyMs: pick(random, [200, 600, 1_500]) };
    case 'trickle-body':
      return { fraction: pick(random, [0.3, 1]), byteMs: pick(random, [20, 60]) };
    case 'endless-body':
      return { fraction: pick(random, [0.1, 0.3]), byteMs: pick(random, [100, 500]) };
    case 'rst-mid-stream':
      return { fraction: pick(random, [0.2, 0.5]) };
    case 'storm-503':
    case 'storm-429':
      return { fraction: pick(random, [0.5, 1]), retryAfter: pick(random, RETRY_AFTERS), trickleMs: pick(random, [0, 0, 500]) };
    case 'goaway-storm':
      return { chance: pick(random, [0.3, 1]) };
    case 'rolling-restart-503':
    case 'rolling-restart-429':
      return { delayMs: pick(random, [0, 300]) };
    case 'apf-saturation':
      return { seats: pick(random, [1, 2]) };
    default:
      return {};
  }
}

function draw(random: Random, kind: FaultKind): Fault {
  const rolling = kind.startsWith('rolling-restart');
  // Mostly one instance, sometimes every one at once (then nothing healthy is left to fail over to).
  const target = rolling || random() < 0.12 ? 'all' : int(random, 0, INSTANCES - 1);
  const startMs = int(random, 0, WORKLOAD_MS - 1_500);
  const durationMs = rolling ? 0 : int(random, 500, 2_500);
  return { kind, target, startMs, durationMs, params: params(random, kind) };
}

/**
 * Schedule `index` of `seed`: its first `lead` faults are of the kinds that follow on from
 * `kinds[index * lead % kinds.length]` (so N schedules cover the kinds evenly; the CI set, with
 * `lead` 2, covers 14 kinds in 7 schedules), then more of any of `kinds` up to two to four in all,
 * overlapping at random.
 */
export function drawSchedule(seed: number, index: number, kinds: readonly FaultKind[] = FAULT_KINDS, lead = 1): Schedule {
  // Lead 1 keeps the stream schedules were first drawn from, so that replay commands already printed stay valid.
  const random = lead === 1 ? seeded(seed, index) : seeded(seed, index, lead);
  const faults = Array.from({ length: lead }, (_, j) => draw(random, kinds[(index * lead + j) % kinds.length]!));
  const more = Math.max(0, int(random, 2, 4) - lead);
  for (let i = 0; i < more; i++) faults.push(draw(random, pick(random, kinds)));
  return { seed, index, faults };
}

export function describeFault(fault: Fault): string {
  const p = Object.entries(fault.params)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  const where = fault.target === 'all' ? 'all' : `#${fault.target}`;
  return `${fault.kind}@${where} ${fault.startMs}+${fault.durationMs}ms${p ? ` ${p}` : ''}`;
}
