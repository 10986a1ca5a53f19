import { setTimeout as sleep } from 'node:timers/promises';
import type { ClientSockets } from './ClientSockets.ts';
import type { Apiserver } from './DemoCluster.ts';
import type { Workload } from './Workload.ts';

const CRASH_SETTLE_MS = 100;
/** How long the crash waits at most for the clients to see their connections to the crashed apiserver close. */
const CRASH_SEEN_MS = 2000;

export interface Phase {
  /** Set when the phase starts if it depends on what happened before (which apiserver crashes). */
  title: string;
  /** Start, in milliseconds from the start of the workload. */
  atMs: number;
  /** What happens at its start; the next phase does not wait for it. */
  run?: () => Promise<void>;
  /** The apiserver it disrupts, for the chart. */
  disrupts?: string;
  /** The phase from which the summary counts where requests go "after the restarts". */
  after?: boolean;
}

/**
 * kube-balancer's slow start (10 s by default) shortened like the apiservers' shutdown, so that an
 * apiserver back from the crash has its full share before the phase "after the restarts".
 */
export function demoSlowStartMs(durationMs: number): number {
  return Math.round(Math.min(10_000, durationMs * 0.08));
}

/**
 * The story, in fractions of the run: all up; a rolling restart of every apiserver, one after the
 * other, in kube-apiserver's default shutdown mode; then the apiserver the one-connection client is
 * on crashes and comes back; then everything is up again, and the summary counts where requests go.
 * `oneConnectionAt` says which apiserver the one-connection client's connection goes to now.
 */
export function scenario(apiservers: readonly Apiserver[], workloads: readonly Workload[], sockets: ClientSockets, durationMs: number, oneConnectionAt: () => Apiserver | undefined): Phase[] {
  const slot = (0.44 * durationMs) / apiservers.length;
  // kube-apiserver's drain and its Shutdown timeout (60 s by default; research/landscape-2026.md,
  // fixtures/apiserver/ShutdownSequence.ts) shortened to fit a slot: open connections bring
  // requests (each answered 503) for `step`, and watches break at the exit, `step` later.
  const step = Math.round(Math.min(1500, Math.max(200, slot / 3)));
  const phases: Phase[] = [{ title: 'all apiservers up', atMs: 0 }];
  let previous: Promise<void> = Promise.resolve();
  for (const [i, apiserver] of apiservers.entries()) {
    phases.push({
      title: `restart ${apiserver.name} (default shutdown)`,
      atMs: durationMs * 0.04 + i * slot,
      disrupts: apiserver.name,
      // One at a time, as a rolling restart goes: a late one waits for the one before to be back.
      run: () => {
        const restart = previous.then(() => apiserver.instance.restart({ shutdown: { drainMs: step, timeoutMs: 2 * step } }));
        previous = restart;
        return restart;
      },
    });
  }
  let crashed: Apiserver | undefined;
  let crashing: Promise<void> = Promise.resolve();
  const crash: Phase = {
    title: 'crash',
    atMs: durationMs * 0.52,
    run: () => {
      // Named at once, for the live view: where the one connection is now.
      const target = oneConnectionAt() ?? apiservers[0]!;
      crashed = target;
      crash.title = `crash ${target.name} (the one connection's)`;
      crash.disrupts = target.name;
      crashing = previous.then(() => crashBetweenCalls(target, workloads, sockets));
      return crashing;
    },
  };
  const back: Phase = {
    title: 'crashed apiserver back',
    atMs: durationMs * 0.58,
    run: () => {
      back.title = `${crashed?.name ?? 'crashed apiserver'} back`;
      return crashing.then(() => crashed?.instance.restart());
    },
  };
  // By then kube-balancer has brought the crashed apiserver back to its full share (`demoSlowStartMs`).
  phases.push(crash, back, { title: 'after the restarts: all up', atMs: durationMs * 0.75, after: true });
  return phases;
}

/** Crashes `apiserver` between two calls of the workloads (their watches are cut all the same). */
async function crashBetweenCalls(apiserver: Apiserver, workloads: readonly Workload[], sockets: ClientSockets): Promise<void> {
  const resume = await Promise.all(workloads.map((w) => w.pause()));
  try {
    await apiserver.instance.crash();
    // The resets are on their way to the clients, but a client learns of one only once its socket
    // reads it; a create written before then is lost to the crash, whatever balances it (no client
    // can know). The demo is about what a client can get right, so it lets them land first: until
    // every client socket to the crashed apiserver has closed (bounded, not a guess at how slow a
    // loaded machine is), then a little longer for what those closes set off.
    await sockets.closedTo(apiserver.address, CRASH_SEEN_MS);
    await sleep(CRASH_SETTLE_MS);
  } finally {
    for (const go of resume) go();
  }
}
