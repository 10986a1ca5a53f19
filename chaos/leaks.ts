// Where the handles and timers a schedule left open were made, for --verbose replays: async_hooks
// keeps the creation stack of each resource until it is destroyed (slow; never in long runs).
import { createHook } from 'node:async_hooks';

/** `process.getActiveResourcesInfo()` names, as async_hooks types. */
const TYPES: Record<string, string> = { Timeout: 'Timeout', TCPSocketWrap: 'TCPWRAP', TCPServerWrap: 'TCPSERVERWRAP', UDPWrap: 'UDPWRAP', ProcessWrap: 'PROCESSWRAP' };
const FRAMES = 4;

const alive = new Map<number, { type: string; stack: string; serial: number; resource: WeakRef<object> }>();
let serial = 0;
let tracking = false;

/** Starts recording creation stacks (once per process). */
export function trackResources(): void {
  if (tracking) return;
  tracking = true;
  const wanted = new Set(Object.values(TYPES));
  createHook({
    init(asyncId, type, _trigger, resource) {
      if (!wanted.has(type)) return;
      const frames = (new Error().stack ?? '').split('\n').slice(1).filter((line) => !line.includes('node:internal') && !line.includes('node:async_hooks') && !line.includes('chaos/leaks.ts'));
      alive.set(asyncId, { type, stack: frames.slice(0, FRAMES).map((f) => f.trim().replace(/^at /, '')).join(' ← '), serial: serial++, resource: new WeakRef(resource) });
    },
    destroy(asyncId) {
      alive.delete(asyncId);
    },
  }).enable();
}

/** A mark to compare against: resources made after it are the schedule's. */
export function mark(): number {
  return serial;
}

/** Where the still-open resources of `kind` (a `getActiveResourcesInfo` name) made since `since` came from. */
export function origins(kind: string, since: number): string[] {
  const type = TYPES[kind];
  if (!tracking || !type) return [];
  // Only the timers `getActiveResourcesInfo` counts: ref'd ones not yet fired or cleared (an HTTP/2
  // stream's unref'd idle timer, or one that fired this tick, is still alive for async_hooks).
  const holds = (r: { resource: WeakRef<object> }): boolean => {
    const timer = r.resource.deref() as { hasRef?(): boolean; _destroyed?: boolean } | undefined;
    return type !== 'Timeout' || (timer !== undefined && timer.hasRef?.() !== false && timer._destroyed !== true);
  };
  return [...alive.values()].filter((r) => r.type === type && r.serial >= since && holds(r)).map((r) => r.stack);
}
