import type { ClientLoad } from './clients.ts';
import type { ClientKey } from './DemoCluster.ts';
import type { Phase } from './scenario.ts';

/** What the views show at one moment. */
export interface Snapshot {
  elapsedMs: number;
  durationMs: number;
  /** Index into `phases` of the current one. */
  phase: number;
  phases: readonly Phase[];
  labels: Record<ClientKey, string>;
  rows: Array<{
    name: string;
    address: string;
    /** The simulated apiserver's own lifecycle state: running, terminating, draining, stopped, crashed… */
    server: string;
    clients: Record<ClientKey, ClientLoad & { rate: number }>;
  }>;
  /** Notable moments since the start, oldest first. */
  events: readonly DemoEvent[];
  /** Requests kube-balancer retried on another apiserver so far. */
  retries: number;
}

export interface DemoEvent {
  atMs: number;
  text: string;
}

export interface View {
  /** Called about four times a second. */
  update(snapshot: Snapshot): void;
  /** The run is over: leave the screen as it is and print from here on. */
  close(): void;
}

export const CLIENT_KEYS: readonly ClientKey[] = ['kubeBalancer', 'oneConnection'];
