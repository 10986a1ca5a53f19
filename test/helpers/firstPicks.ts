// Where each request of one balancer was first sent, by its path (tests give every request its own
// path, so that the path names it), read from the `kube-balancer:pick` channel.
import diagnostics_channel from 'node:diagnostics_channel';
import type * as undici from 'undici';
import type { PickMessage } from '../../src/observability/channels.ts';

/** `value` says what to keep of each first pick (read at the moment of the pick); `stop()` unsubscribes. */
export function firstPicks<T>(balancer: undici.Dispatcher, value: (message: PickMessage) => T): { picks: Map<string, T>; stop: () => void } {
  const picks = new Map<string, T>();
  const onPick = (message: unknown): void => {
    const m = message as PickMessage;
    if (m.balancer === balancer && m.attempt === 1) picks.set(m.request.path, value(m));
  };
  diagnostics_channel.subscribe('kube-balancer:pick', onPick);
  return { picks, stop: () => diagnostics_channel.unsubscribe('kube-balancer:pick', onPick) };
}
