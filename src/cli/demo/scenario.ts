import { setTimeout as sleep } from 'node:timers/promises';
import type { Apiserver } from './DemoCluster.ts';
import type { Workload } from './Workload.ts';

const CRASH_SETTLE_MS = 100;

export interface Phase {
  title: string;
  /** Start, in milliseconds from the start of the workload. */
  atMs: number;
  /** What happens at its start; the next phase does not wait for it. */
  run?: () => Promise<void>;
  /** The apiserver it disrupts, for the chart. */
  disrupts?: string;
}

/**
 * The story, in fractions of the run: all up; one apiserver crashes; it comes back; another shuts
 * down gracefully (the drain of a rolling restart); it comes back. The pinned apiserver of the
 * one-connection client is never touched, so that client never fails: the contrast is where the
 * requests go, not who survives.
 */
export function scenario(apiservers: readonly Apiserver[], workloads: readonly Workload[], durationMs: number): Phase[] {
  const crashed = apiservers[1]!;
  const drained = apiservers[Math.min(2, apiservers.length - 1)]!;
  // The shutdown delay and drain of a real apiserver (seconds to minutes), shortened to fit a phase.
  const step = Math.min(2000, Math.max(1000, durationMs * 0.05));
  return [
    { title: 'all apiservers up', atMs: 0 },
    {
      title: `crash ${crashed.name}`,
      atMs: durationMs * 0.2,
      disrupts: crashed.name,
      run: async () => {
        const resume = await Promise.all(workloads.map((w) => w.pause()));
        try {
          await crashed.instance.crash();
          // The resets are in the clients' kernel buffers now, but a client learns of them only on
          // its next turn of the event loop; a create written before then is lost to the crash,
          // whatever balances it. The demo is about where requests go, so it lets them land first.
          await sleep(CRASH_SETTLE_MS);
        } finally {
          for (const go of resume) go();
        }
      },
    },
    { title: `${crashed.name} back`, atMs: durationMs * 0.4, run: () => crashed.instance.restart() },
    {
      title: `drain ${drained.name} (graceful shutdown)`,
      atMs: durationMs * 0.55,
      disrupts: drained.name,
      // Not awaited by the next phase: restart() waits for the shutdown to finish.
      run: () => drained.instance.shutdown({ delayMs: step, drainMs: step, sendRetryAfter: true }),
    },
    { title: `${drained.name} back`, atMs: durationMs * 0.75, run: () => drained.instance.restart() },
  ];
}
