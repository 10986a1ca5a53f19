// BENCHMARKS.md's section for `npm run bench -- proxy` (issue 29, item 6), from its runs kept in
// bench/runs/proxy-*.json; called by bench/report.ts.
import { KUBE_BALANCER, KUBECTL, targetRows, type ProxyRow, type ProxyRun } from './proxy.ts';

const cell = (values: Array<number | string | null | undefined>): string => values.map((v) => (v === null || v === undefined ? '–' : String(v))).join(' / ');

export function proxySection(runs: ProxyRun[]): string[] {
  if (runs.length === 0) return [];
  const first = runs[0]!.settings;
  const lines = [
    '## kubectl proxy against kube-balancer proxy (issue 29)',
    '',
    `\`npm run bench -- proxy\` (about two minutes): the real \`kubectl proxy\` (${first.kubectl}) and \`kube-balancer proxy\`, each`,
    'its own child process, given one kubeconfig whose server is a haproxy `mode tcp` in front of three simulated',
    'apiservers (fixtures/apiserver, in a process of their own): the single URL most clusters hand out. kubectl',
    'proxy keeps one HTTP/2 connection through it, so it is pinned to one apiserver until that connection',
    'breaks; kube-balancer proxy reads the three addresses from the `default/kubernetes` EndpointSlice. The same',
    `client for both: an undici Pool in the bench process, GET of one ConfigMap over HTTP/1.1, open loop at ${first.rate}`,
    `req/s, a ${first.deadlineMs / 1000}-s deadline; every phase after a discarded ${first.warmMs / 1000}-s warm-up at that rate.`,
    '',
    `- **steady**: ${first.rounds} interleaved rounds of ${first.ms / 1000} s of direct requests (a Pool over HTTP/2 straight to apiserver 0,`,
    '  with the token), kubectl proxy and kube-balancer proxy. **Added** latency is the proxy\'s percentile less',
    '  the direct one, all rounds pooled. **Spread** is the largest share of the requests the apiservers saw',
    '  over the smallest (∞: one saw none). **Proxy CPU** is the proxy process\'s user + system time from',
    '  /proc/<pid>/stat (10-ms ticks) over the requests; **CPU wait** how long its threads were runnable but',
    '  not run (/proc/<pid>/task/*/schedstat), per second: the machine\'s share of its latency.',
    '- **rolling restart**: each apiserver in turn shut down gracefully (kube-apiserver\'s defaults: no delay,',
    '  503 + Retry-After on open connections for 1 s, then GOAWAY; open connections given 3 s, not 60, so',
    '  that a watch held open does not hold the run) and started again, 1.5 s apart.',
    `- **crash**: ${first.crashMs / 1000} s; at a third the apiserver that had served the most of the phase (kubectl proxy's own) is`,
    '  killed (connections reset, new ones refused), and started again after.',
    '- A request **failed** when it got anything but 200, or no answer within the deadline.',
    '',
    '| run | started (UTC) | CPU | cores | Node | load average at the end (1/5/15 min) | idle CPU ms/s: kubectl proxy / kube-balancer proxy |',
    '|---|---|---|---|---|---|---|',
    ...runs.map((r, k) => `| ${k + 1} | ${r.startedAt} | ${r.machine.cpu} | ${r.machine.cores} | ${r.machine.node} | ${r.machine.loadavg.join(' / ')} | ${r.idleCpuMsPerS[KUBECTL] ?? '–'} / ${r.idleCpuMsPerS[KUBE_BALANCER] ?? '–'} |`),
    '',
    'Targets (issue 29) for kube-balancer proxy; cells `run 1 / run 2 / …`:',
    '',
    '| figure | target | kubectl proxy | kube-balancer proxy | kube-balancer ÷ kubectl | met |',
    '|---|---|---|---|---|---|',
  ];
  const targets = runs.map((r) => targetRows(r.summary));
  targets[0]!.forEach((row, i) => {
    const col = (key: string): string => cell(targets.map((t) => t[i]?.[key]));
    lines.push(`| ${row.figure} | ${row.target} | ${col(KUBECTL)} | ${col(KUBE_BALANCER)} | ${col('kube-balancer ÷ kubectl')} | ${col('met')} |`);
  });
  lines.push('', `Direct to apiserver 0, steady: p50 ${cell(runs.map((r) => r.direct.p50))} ms, p99 ${cell(runs.map((r) => r.direct.p99))} ms.`, '');
  lines.push(
    '| phase | client | requests | failed | answers | p50 ms | p99 ms | max ms | proxy CPU µs/req | CPU wait ms/s | share |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  );
  const key = (r: ProxyRow): string => `${r.phase}${r.phase === 'steady' ? ` (round ${r.round + 1})` : ''}|${r.client}`;
  const keys = [...new Set(runs.flatMap((r) => r.rows.map(key)))];
  for (const k of keys) {
    const rows = runs.map((run) => run.rows.find((r) => key(r) === k));
    const [phase, client] = k.split('|');
    const answers = (r: ProxyRow | undefined): string | undefined =>
      r &&
      Object.entries(r.statuses)
        .map(([status, n]) => `${status === '0' ? 'none' : status}×${n}`)
        .join(' ');
    lines.push(
      `| ${phase} | ${client} | ${cell(rows.map((r) => r?.requests))} | ${cell(rows.map((r) => r?.failed))} | ${cell(rows.map(answers))} | ${cell(rows.map((r) => r?.p50))} | ${cell(rows.map((r) => r?.p99))} | ${cell(rows.map((r) => r?.max))} | ${cell(rows.map((r) => r?.proxyCpuUs))} | ${cell(rows.map((r) => r?.proxyWaitMsPerS))} | ${cell(rows.map((r) => r?.share.join(':')))} |`,
    );
  }
  return [...lines, '', ...proxyFindings(), '', ...proxyFloor(), ''];
}

/** What the runs say, written from them (issue 29, item 6). */
function proxyFindings(): string[] {
  return [
    '**What runs 1–2 say** (2026-12-05, before the fixes of run 3 below; the trial run before them is not kept: it let a proxy\'s backlog run',
    'into the next phase, which now waits 2 s). The machine was loaded far past its two cores in both (load',
    'average 15–22 from other work), and every latency figure is the machine\'s more than a proxy\'s: even',
    'direct requests had a p99 of 44–160 ms a round.',
    '',
    '- *Failures*: kube-balancer proxy failed none through the rolling restart and the crash, in both runs.',
    '  kubectl proxy passed on 200 / 401 of its apiserver\'s 503s while that one drained (once or twice in a',
    '  roll, as haproxy handed its new connection to an apiserver not yet restarted), and 2 / 2 in the crash',
    '  (500s, the in-flight requests on the reset connection, and one without an answer).',
    '- *CPU per request and latency* (targets missed): kube-balancer proxy spent 1.30–1.41 ms of CPU per',
    '  request against kubectl proxy\'s 0.82 (1.59–1.73×), 260–280 ms of CPU a second at 200 req/s, on one',
    '  JavaScript thread, where kubectl proxy spreads its work over Go\'s threads. With the machine giving it',
    '  less than that (its threads waited for a CPU 1.1–1.5 s a second), requests queued in it: p50 5–1,425',
    '  ms a phase, and in run 2\'s first steady round 241 requests went past the 5-s deadline. kubectl proxy',
    '  kept up (p50 2–3 ms). The 1-ms added-p99 target cannot be judged on this machine; the CPU ratio can',
    '  (it is CPU time, not wall time), though CPU per request itself grows on a crowded machine. Idle, kube-',
    '  balancer proxy costs ~10 ms of CPU a second (probes, its EndpointSlice watch), kubectl proxy nothing.',
    '- *Spread* (target missed): 2.42 / 2.34× over the steady rounds, one apiserver taking up to two thirds',
    '  of a round (205 : 194 : 815). The three simulated apiservers share one process and answer alike, so',
    '  the skew is the proxy\'s: a likely cause, not verified, is the load-aware weights reading the proxy\'s',
    '  own queueing (its thread starved) as an apiserver\'s latency. kubectl proxy: pinned, as expected.',
    '',
    '**Run 3** (after two fixes; load average 2.6 at its end, so its latencies are the proxies\' more than the machine\'s):',
    '',
    '- *Spread* (target met): 1.005, 409 : 406 : 408 and 400 : 399 : 400. The cause of runs 1–2 was as guessed:',
    '  a starved proxy\'s answers wait for its own event loop before they are timed, and those waits, tens to',
    '  hundreds of ms and uneven, passed the 3-ms noise margin of the load-aware weights. The margin now adds',
    '  the proxy\'s own event-loop lag of the last 2 s (test/proxy/starved.test.ts: a loop held 0–60 ms of every',
    '  50 spread 130 : 234 : 243 before, now within 1.25×).',
    '- *CPU per request* (target missed): 1,255 µs against kubectl proxy\'s 784 (1.60×); the first round, the',
    '  first cell after start-up, 1,468, the second 1,042 (1.36×). The proxy now writes the balancer\'s answer',
    '  from a dispatch handler (no body stream, pipeline or abort signal per request), reads no body where',
    '  there is none, and flushes headers early only for answers of unknown length. Measured alone',
    '  (`npm run bench -- proxycpu`, 3,000 GETs at 200/s, before and after interleaved): 1,453 / 1,502 →',
    '  1,252 / 1,218 / 1,185 µs. What is left is mostly Node\'s HTTP/2 client and HTTP server, not the proxy\'s code.',
    '- *Failures*: none through the rolling restart and the crash (kubectl proxy: 400 and 2).',
  ];
}

/** Why the proxy's CPU and p99 targets are out of reach on Node (issue 29): the floor, measured apart. */
function proxyFloor(): string[] {
  return [
    '### The floor of a Node proxy (2026-12-06)',
    '',
    'Run 3 left "mostly Node\'s HTTP/2 client and HTTP server" as a guess. Measured now:',
    '`BENCH_PROXY_FLOOR=1 BENCH_ROUNDS=3 npm run bench -- proxycpu` runs three proxies in turn, three',
    'rounds, each given the same kubeconfig (its server apiserver 0 directly, no haproxy), 3,000 GETs',
    'of one ConfigMap at 200 req/s after 1,000 discarded, CPU from /proc less the proxy\'s idle CPU:',
    '',
    '- **kube-balancer proxy**, as shipped;',
    '- **the floor** (`bench/repro/thin-proxy.ts`): `node:http` in front of one undici `Pool` over',
    '  HTTP/2 + TLS to the kubeconfig\'s server, the token added, the answer written from a dispatch',
    '  handler. No balancing, no checks, no credentials refresh: what any proxy on Node\'s HTTP server',
    '  and undici costs at least;',
    '- **kubectl proxy** v1.32.',
    '',
    'A quiet machine (load average 0.2–0.4; 2026-12-06T03:27:57Z, AMD EPYC, 2 cores, Node v22.23.3):',
    '',
    '| proxy | CPU µs/req, rounds 1 / 2 / 3 | p50 ms | p99 ms | spread over the apiservers |',
    '|---|---|---|---|---|',
    '| kube-balancer proxy | 883 / 822 / 798 | 1.45 / 1.30 / 1.19 | 10.1 / 7.1 / 6.1 | 1,000 : 1,000 : 1,000 |',
    '| node:http + undici Pool (floor) | 583 / 817 / 620 | 0.97 / 1.30 / 0.94 | 4.0 / 7.9 / 4.1 | pinned |',
    '| kubectl proxy | 530 / 415 / 453 | 0.97 / 0.76 / 0.81 | 2.4 / 2.5 / 2.3 | pinned |',
    '',
    'The floor alone costs 1.1–2.0× kubectl proxy\'s CPU per request (median 620 against 453 µs) and',
    'its p99 is 1.6–5.4 ms above kubectl proxy\'s: **"CPU per request ≤ kubectl proxy\'s" and "added p99',
    '≤ 1 ms" cannot be met by any proxy built on Node\'s HTTP server and undici on this machine**,',
    'whatever its own code does. kube-balancer proxy costs 1.0–1.4× the floor (median 822 against',
    '620 µs: balancing, health, hedging, the Host and cross-site checks, credentials); that is the',
    'part this project can still shrink. Reaching kubectl proxy\'s figure would need another HTTP stack',
    '(a native one, or the proxy written in Go), which the design\'s fixed platform (Node, undici) rules',
    'out.',
  ];
}
