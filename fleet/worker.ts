// One strategy's run in a worker thread, so that the strategies of a scenario use every core.
import { parentPort, workerData } from 'node:worker_threads';
import { summarize, type StrategyOutcome } from './report.ts';
import { scenarios } from './scenarios.ts';
import { runStrategy, type RunOptions } from './sim/Fleet.ts';
import { strategies } from './sim/strategies.ts';
import { cpuSeconds, epochMs } from './run.ts';

// The modules are loaded (imports come first): what start-up cost this thread, for `--timings`.
const startedAt = epochMs();
const loaded = process.threadCpuUsage();
const { scenario, strategy, options } = workerData as { scenario: string; strategy: string; options: RunOptions };
const run = await runStrategy(scenarios[scenario]!, strategies[strategy]!, options);
const { seconds, servers, requests, watches, ready, dns } = run.meter;
const outcome: StrategyOutcome = { id: strategy, result: summarize(run), chart: { label: run.strategy.label, marks: run.marks, series: { seconds, servers, requests, watches, ready, dns } } };
const thread = process.threadCpuUsage();
outcome.timings = { startedAt, loadCpuSeconds: cpuSeconds(loaded), threadCpuSeconds: cpuSeconds(thread), postedAt: epochMs() };
parentPort!.postMessage(outcome);
