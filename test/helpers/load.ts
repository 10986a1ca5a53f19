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
