import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `condition` in real time until it holds, for at most `ms`; returns whether it did. Tests on
 * real sockets wait this way rather than for a fixed time, so a slow machine only makes them slower.
 */
export async function until(condition: () => boolean, ms = 10_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await sleep(5);
  }
  return true;
}
