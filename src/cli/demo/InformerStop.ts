import { setTimeout as sleep } from 'node:timers/promises';
import type * as ClientNode from '@kubernetes/client-node';

type WatchArgs = Parameters<ClientNode.Watch['watch']>;

/**
 * Stops client-node 2.0's informers (`ListWatch`) for good, which their own `stop()` does not: it
 * aborts only the watch it holds, so one still opening runs on and holds the balancer's `close()`
 * (docs/chaos.md, schedule 343); and the reconnect delay it waits after a watch that ended with no
 * event (1 s, doubling to 30 s) is a timer it does not end, after which it opens a watch anyway
 * (schedules 142, 257). Give each `ListWatch` this `watch` and `delayFn`; call `stop()` before theirs.
 */
export class InformerStop {
  readonly #stopping = new AbortController();
  readonly #inner: ClientNode.Watch;
  /** Opens nothing once stopped, and aborts what was still opening when the stop came. `ListWatch` only calls `watch()`. */
  readonly watch: ClientNode.Watch;
  /** The reconnect delay, ended by the stop. Resolves either way: `ListWatch` does not handle its rejection. */
  readonly delayFn = (ms: number): Promise<void> => sleep(ms, undefined, { signal: this.#stopping.signal }).catch(() => {});

  constructor(inner: ClientNode.Watch) {
    this.#inner = inner;
    this.watch = { watch: (...args: WatchArgs) => this.#watch(...args) } as unknown as ClientNode.Watch;
  }

  get stopped(): boolean {
    return this.#stopping.signal.aborted;
  }

  stop(): void {
    this.#stopping.abort();
  }

  async #watch(...args: WatchArgs): Promise<AbortController> {
    if (this.stopped) {
      const none = new AbortController();
      none.abort();
      return none;
    }
    const controller = await this.#inner.watch(...args);
    if (this.stopped) controller.abort();
    return controller;
  }
}
