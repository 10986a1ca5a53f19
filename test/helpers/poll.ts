import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `check` until it returns a truthy value and returns that value; throws after `timeoutMs`.
 * For conditions another process or socket brings about: tests wait for them, never for a fixed time.
 */
export async function until<T>(check: () => T | Promise<T>, { timeoutMs = 20_000, intervalMs = 10, what = 'condition' } = {}): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}
