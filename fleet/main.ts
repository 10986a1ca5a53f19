// npm run fleet -- --scenario rolling-restart --clients 5000 --apiservers 3 --seed 1 --minutes 10 [--json] [--out dir]
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { table, timingsTable } from './report.ts';
import { runScenario } from './run.ts';
import { scenarios } from './scenarios.ts';
import { chart } from './svg.ts';

const { values } = parseArgs({
  options: {
    scenario: { type: 'string', default: 'rolling-restart' },
    clients: { type: 'string', default: '5000' },
    apiservers: { type: 'string', default: '3' },
    seed: { type: 'string', default: '1' },
    minutes: { type: 'string', default: '10' },
    strategies: { type: 'string' },
    parallel: { type: 'string' },
    'min-ttl': { type: 'string' },
    'dns-ttl': { type: 'string' },
    'shutdown-delay': { type: 'string' },
    'probe-interval': { type: 'string' },
    json: { type: 'boolean', default: false },
    timings: { type: 'boolean', default: false },
    out: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});

if (values.help) {
  console.log(`npm run fleet -- [--scenario NAME|all] [--clients N] [--apiservers N] [--seed N] [--minutes N]
                     [--strategies a,b] [--min-ttl MS] [--dns-ttl S] [--shutdown-delay S]
                     [--probe-interval MS] [--json] [--timings] [--out DIR]
scenarios: ${Object.keys(scenarios).join(', ')}`);
  process.exit(0);
}

const positive = (name: string, value: string | undefined): number => {
  const n = Number(value);
  if (!(n > 0)) throw new Error(`--${name} must be a positive number, got ${value}`);
  return n;
};

const names = values.scenario === 'all' ? Object.keys(scenarios) : [values.scenario];
const results = [];
for (const name of names) {
  const { result, charts, timings } = await runScenario({
    scenario: name,
    clients: Math.round(positive('clients', values.clients)),
    apiservers: Math.round(positive('apiservers', values.apiservers)),
    seed: Math.round(Number(values.seed)),
    minutes: positive('minutes', values.minutes),
    ...(values.strategies ? { strategies: values.strategies.split(',') } : {}),
    ...(values['min-ttl'] ? { minTtlMs: positive('min-ttl', values['min-ttl']) } : {}),
    ...(values['dns-ttl'] !== undefined ? { dnsTtl: Number(values['dns-ttl']) } : {}),
    ...(values['shutdown-delay'] !== undefined ? { shutdownDelaySeconds: Number(values['shutdown-delay']) } : {}),
    ...(values['probe-interval'] ? { probeIntervalMs: positive('probe-interval', values['probe-interval']) } : {}),
    ...(values.parallel ? { parallel: positive('parallel', values.parallel) } : {}),
  });
  results.push(result);
  if (values.out) {
    mkdirSync(values.out, { recursive: true });
    const file = join(values.out, `${name}.svg`);
    writeFileSync(file, chart(`${result.title} — ${result.clients} clients × ${result.apiservers} apiservers, seed ${result.seed}`, charts));
    writeFileSync(join(values.out, `${name}.json`), `${JSON.stringify(result, null, 2)}\n`);
    if (!values.json) console.log(`wrote ${file} and ${name}.json`);
  }
  if (!values.json) {
    console.log(table(result));
    console.log(`simulated in ${result.wallSeconds} s wall, ${result.cpuSeconds} s CPU\n`);
  }
  if (values.timings) (values.json ? console.error : console.log)(timingsTable(timings));
}
if (values.json) console.log(JSON.stringify(results.length === 1 ? results[0] : results, null, 2));
