// `npm run chaos`: fault schedules drawn from a seed, each run against the real balancer and a
// one-connection baseline, judged by chaos/invariants.ts; a failing one is replayed, shrunk and printed
// as a one-line replay command. Flags: --schedules N, --seed S, --schedule K [--keep i,j], --kind K, --ci, --json, --no-shrink,
// --verbose (every judgement, the balancer's ejections against the fault windows, and where a leftover was made).
import { parseArgs } from 'node:util';
import { trackResources } from './leaks.ts';
import { runSchedule, type ScheduleResult } from './run.ts';
import { FAULT_KINDS, describeFault, drawSchedule, type FaultKind, type Schedule } from './schedule.ts';

const { values } = parseArgs({
  options: {
    schedules: { type: 'string' },
    seed: { type: 'string', default: '1' },
    schedule: { type: 'string' },
    keep: { type: 'string' },
    kind: { type: 'string', multiple: true },
    ci: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    'no-shrink': { type: 'boolean', default: false },
    verbose: { type: 'boolean', default: false },
  },
});

const seed = Number(values.seed);
const kinds = (values.kind ?? [...FAULT_KINDS]) as FaultKind[];
for (const kind of kinds) if (!FAULT_KINDS.includes(kind)) throw new Error(`--kind ${kind}: one of ${FAULT_KINDS.join(', ')}`);
// --ci: 7 schedules whose first two faults walk the 14 kinds, no shrinking, a failing one rerun once: about 40–90 s.
const lead = values.ci ? 2 : 1;
const count = Number(values.schedules ?? (values.ci ? Math.ceil(kinds.length / lead) : 3 * kinds.length));
const shrinking = !values.ci && !values['no-shrink'];
const log = (line: string): void => void (values.json ? process.stderr : process.stdout).write(`${line}\n`);

function replay(schedule: Schedule, keep?: number[]): string {
  const kindFlags = values.kind ? values.kind.map((k) => ` --kind ${k}`).join('') : '';
  return `npm run chaos -- ${values.ci ? '--ci ' : ''}--seed ${schedule.seed} --schedule ${schedule.index}${kindFlags}${keep ? ` --keep ${keep.join(',')}` : ''}`;
}

function keepOnly(schedule: Schedule, keep: number[]): Schedule {
  return { ...schedule, faults: keep.map((i) => schedule.faults[i]!).filter(Boolean) };
}

function summary(r: ScheduleResult): string {
  const faults = r.schedule.faults.map(describeFault).join(' | ');
  return `#${r.schedule.index} [${faults}] failed: balancer ${r.failures.balancer}/${r.requests.balancer}, one connection ${r.failures.pool}/${r.requests.pool}; informer errors ${r.informerErrors};${r.stuck.map((s) => ` drain of #${s.instance} cut at ${Math.round(s.at)} ms holding ${s.ids.length} named request(s);`).join('')} violations ${r.violations.length}; ${(r.ms / 1000).toFixed(1)} s`;
}

/** Greedy: drop each fault in turn while the schedule still breaks one of the same invariants. */
async function shrink(schedule: Schedule, seen: Set<string>): Promise<{ keep: number[]; runs: number; reproduced: boolean }> {
  let keep = schedule.faults.map((_, i) => i);
  const again = await runSchedule(schedule);
  const breaks = (r: ScheduleResult): boolean => r.violations.some((v) => seen.has(v.invariant));
  if (!breaks(again)) return { keep, runs: 1, reproduced: false };
  let runs = 1;
  for (const drop of [...keep]) {
    if (keep.length === 1) break;
    const trial = keep.filter((i) => i !== drop);
    runs++;
    if (breaks(await runSchedule(keepOnly(schedule, trial)))) keep = trial;
  }
  return { keep, runs, reproduced: true };
}

// Where a leftover timer or socket was made, named in --verbose replays.
if (values.verbose) trackResources();
// The standard streams' handles open on first use: open them now, so that the leak check does not count them.
void process.stdout;
void process.stderr;
const results: ScheduleResult[] = [];
const found: { replay: string; shrunk?: string; reproduced?: boolean; invariants: string[]; details: string[] }[] = [];
const indexes = values.schedule !== undefined ? [Number(values.schedule)] : Array.from({ length: count }, (_, i) => i);
const started = performance.now();
for (const index of indexes) {
  let schedule = drawSchedule(seed, index, kinds, lead);
  if (values.keep !== undefined) schedule = keepOnly(schedule, values.keep.split(',').map(Number));
  const result = await runSchedule(schedule);
  results.push(result);
  log(summary(result));
  const details = result.violations.map((v) => `  ${v.invariant}: ${v.detail}`);
  for (const line of details.slice(0, 8)) log(line);
  if (details.length > 8 && !values.verbose) log(`  … ${details.length - 8} more`);
  // A replay's every judgement, even of a schedule that passed (a failure one connection did not have is worth reading).
  if (values.verbose) for (const line of [...details.slice(8), ...result.judgements.filter((j) => j.justified).map((j) => `  justified: ${j.why}`), ...result.poolFailed.map((p) => `  one connection failed: ${p}`), ...result.events.map((e) => `  event: ${e}`)]) log(line);
  if (result.violations.length === 0) continue;
  log(`  replay: ${replay(schedule)}`);
  const entry: (typeof found)[number] = { replay: replay(schedule), invariants: [...new Set(result.violations.map((v) => v.invariant))], details };
  if (shrinking && values.keep === undefined && schedule.faults.length > 1) {
    const shrunk = await shrink(schedule, new Set(entry.invariants));
    entry.reproduced = shrunk.reproduced;
    if (shrunk.reproduced) {
      entry.shrunk = replay(schedule, shrunk.keep);
      log(`  shrunk (${shrunk.runs} runs) to ${shrunk.keep.length} fault(s): ${keepOnly(schedule, shrunk.keep).faults.map(describeFault).join(' | ')}`);
      log(`  replay: ${entry.shrunk}`);
    } else log('  did not reproduce on a rerun: counted as a flake');
  } else if (values.ci) {
    // CI: one rerun tells a race from a rule; only a violation that comes back fails the run.
    const again = await runSchedule(schedule);
    entry.reproduced = again.violations.some((v) => entry.invariants.includes(v.invariant));
    log(entry.reproduced ? '  reproduced on a rerun' : '  did not reproduce on a rerun: counted as a flake');
  }
  found.push(entry);
}

// Per fault kind: the schedules holding it, those that broke an invariant, and the failed requests of each client summed over them.
const table = FAULT_KINDS.filter((k) => kinds.includes(k)).map((kind) => {
  const rows = results.filter((r) => r.schedule.faults.some((f) => f.kind === kind));
  return {
    kind,
    schedules: rows.length,
    violating: rows.filter((r) => r.violations.length > 0).length,
    balancerFailures: rows.reduce((s, r) => s + r.failures.balancer, 0),
    poolFailures: rows.reduce((s, r) => s + r.failures.pool, 0),
  };
});
const violations = results.reduce((s, r) => s + r.violations.length, 0);
const flakes = found.filter((f) => f.reproduced === false).length;
const seconds = (performance.now() - started) / 1000;
if (values.json) {
  console.log(JSON.stringify({ seed, schedules: results.length, seconds, violations, flakes, table, found }, null, 2));
} else {
  log('\n| fault kind | schedules | with violations | balancer failures | one connection failures |');
  log('|---|---:|---:|---:|---:|');
  for (const row of table) log(`| ${row.kind} | ${row.schedules} | ${row.violating} | ${row.balancerFailures} | ${row.poolFailures} |`);
  const worse = table.filter((row) => row.balancerFailures > row.poolFailures).map((row) => row.kind);
  log(`\n${results.length} schedules in ${seconds.toFixed(0)} s: ${violations} violations (${found.length} schedules, ${flakes} flakes); balancer worse than one connection on: ${worse.join(', ') || 'none'}`);
}
// Exit even if something (a leak the left-open invariant reports) still holds the event loop.
// --ci fails on a violation that reproduced; any other run on any violation.
process.exit((values.ci ? found.some((f) => f.reproduced) : violations > 0) ? 1 : 0);
