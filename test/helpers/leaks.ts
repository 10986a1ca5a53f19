import { setTimeout as sleep } from 'node:timers/promises';

/** Counts active handles by type (sockets, timers, servers…), as `getActiveResourcesInfo` lists them. */
export function activeResources(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const type of process.getActiveResourcesInfo()) counts.set(type, (counts.get(type) ?? 0) + 1);
  return counts;
}

/**
 * Waits (up to `ms`) until no resource type has more handles than in `baseline`, and returns what is
 * still left over: an empty object means nothing leaked. Sockets need a few ticks to close on both ends.
 */
export async function leftOver(baseline: Map<string, number>, ms = 3000): Promise<Record<string, number>> {
  const deadline = Date.now() + ms;
  for (;;) {
    const extra: Record<string, number> = {};
    for (const [type, count] of activeResources()) {
      const over = count - (baseline.get(type) ?? 0);
      if (over > 0) extra[type] = over;
    }
    if (Object.keys(extra).length === 0 || Date.now() > deadline) return extra;
    await sleep(20);
  }
}
