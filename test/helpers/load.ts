/** Runs `count` calls of `send`, `concurrency` at a time; returns each call's error (or undefined). */
export async function load<T>(count: number, concurrency: number, send: (i: number) => Promise<T>): Promise<Array<{ value?: T; error?: Error }>> {
  const results: Array<{ value?: T; error?: Error }> = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        try {
          results[i] = { value: await send(i) };
        } catch (error) {
          results[i] = { error: error as Error };
        }
      }
    }),
  );
  return results;
}

/** Polls `check` every 10 ms until it returns true or `ms` pass; returns the last result. */
export async function eventually(check: () => boolean, ms = 5000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 10));
  }
  return true;
}
