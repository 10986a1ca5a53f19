// npm run bench: every benchmark in turn; each prints a table and writes bench/results/<name>.json.
// `npm run bench -- dispatch` runs one.
import { writeResults } from './lib.ts';

const suites: Record<string, () => Promise<{ run: () => Promise<unknown> }>> = {
  compare: () => import('./compare.ts'),
  dispatch: () => import('./dispatch.ts'),
  holdback: () => import('./holdback.ts'),
  failover: () => import('./failover.ts'),
  picker: () => import('./picker.ts'),
  spread: () => import('./spread.ts'),
  dns: () => import('./dns.ts'),
  proxy: () => import('./proxy.ts'),
  proxycpu: () => import('./proxyCpu.ts'),
};

const wanted = process.argv.slice(2);
for (const name of wanted.length ? wanted : Object.keys(suites)) {
  const load = suites[name];
  if (!load) throw new Error(`unknown benchmark "${name}" (known: ${Object.keys(suites).join(', ')})`);
  console.log(`\n== ${name}`);
  const file = writeResults(name, await (await load()).run());
  console.log(`(written to ${file})`);
}
