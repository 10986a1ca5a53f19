// This process's own stalls (a busy CPU, a GC pause), measured as the balancer's LagMonitor does
// (a 100-ms interval timer's lateness), so that a test bounding a product timer in wall-clock time
// can allow for the lateness the product itself allows for, and for nothing more.
const TICK_MS = 100;

export interface Stalls {
  /** Stalls that ended in [from, to] (`performance.now()` times): their sum, and how many exceeded `overMs`. */
  between(from: number, to: number, overMs: number): { total: number; over: number };
  close(): void;
}

export function watchStalls(): Stalls {
  const seen: Array<{ at: number; ms: number }> = [];
  let expected = performance.now() + TICK_MS;
  const timer = setInterval(() => {
    const now = performance.now();
    const late = now - expected;
    if (late > 0) seen.push({ at: now, ms: late });
    expected = now + TICK_MS;
  }, TICK_MS);
  return {
    between(from, to, overMs) {
      // Each sample's stall began up to its length before it ended.
      const inside = seen.filter((s) => s.at >= from && s.at - s.ms <= to);
      return { total: inside.reduce((n, s) => n + s.ms, 0), over: inside.filter((s) => s.ms > overMs).length };
    },
    close: () => clearInterval(timer),
  };
}
