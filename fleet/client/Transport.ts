import type { RequestKind } from '../server/Apiserver.ts';

/** One request as the application's client library sends it, across that library's own retries. */
export interface AppCall {
  readonly kind: RequestKind;
  /** A watch: the resourceVersion (as the virtual time it was current) it starts from. */
  readonly since: number;
  /** A watch: its `timeoutSeconds`, in ms. */
  readonly timeoutMs: number;
  /** Discovery's own request (see `Exchange.discovery`). */
  readonly discovery?: boolean;
  /** An open discovery watch's event. */
  event?(line: string): void;
  /** The response (for a watch: 200 when it opened, or the status that refused it). */
  answered(status: number, headers: Record<string, string>): void;
  /** An open watch ended: the server ended it, a balancer ended it between events, or its connection broke. */
  watchEnded(): void;
  /** No response: the transport failed the request. */
  errored(): void;
}

/** How a client's requests reach the apiservers: an L4 connection, or kube-balancer. */
export interface Transport {
  send(call: AppCall): void;
  /** Attempts the transport itself sent again (kube-balancer's retries on another endpoint; Go's replay after GOAWAY). */
  readonly retries: number;
  close(): void;
}
