import diagnostics_channel from 'node:diagnostics_channel';
import type { EjectReason, EndpointInfo } from '../balancer/Endpoint.ts';
import type { RetryReason } from '../health/outcome.ts';

/**
 * `node:diagnostics_channel` channels, for tracing and APMs that subscribe by name. Publishers check
 * `hasSubscribers` first, so nothing is built when no one listens. Messages carry the balancer, so
 * a process with several can tell them apart.
 */

/** The request an attempt belongs to, as the caller sent it (`origin` is the balanced name, not the endpoint). */
export interface ChannelRequest {
  method: string;
  path: string;
  origin: string;
}

/** `kube-balancer:pick`: an endpoint was chosen for an attempt (the first or a retry). */
export interface PickMessage {
  balancer: object;
  request: ChannelRequest;
  endpoint: EndpointInfo;
  /** 1 for the first attempt, 2 for the first retry… */
  attempt: number;
  /** A watch, `follow=true` log or upgrade: placed by open streams. */
  longRunning: boolean;
}

/** `kube-balancer:retry`: a request moves to another endpoint (published before that attempt's pick). */
export interface RetryMessage {
  balancer: object;
  request: ChannelRequest;
  from: EndpointInfo;
  to: EndpointInfo;
  reason: RetryReason;
  /** The attempt about to start: 2 for the first retry. */
  attempt: number;
}

/** `kube-balancer:eject`: an endpoint stopped taking requests for `durationMs`. */
export interface EjectMessage {
  balancer: object;
  endpoint: EndpointInfo;
  reason: EjectReason;
  durationMs: number;
}

export const pickChannel = diagnostics_channel.channel('kube-balancer:pick');
export const retryChannel = diagnostics_channel.channel('kube-balancer:retry');
export const ejectChannel = diagnostics_channel.channel('kube-balancer:eject');
