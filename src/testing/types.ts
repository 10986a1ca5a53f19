import type {
  AnonymousAccess,
  ApiserverCluster,
  ApiserverClusterOptions,
  ApiserverInstance,
  InstanceState,
  KubeconfigOptions,
  ShutdownOptions,
} from '../../fixtures/apiserver/index.ts';
import type { Pki } from '../../fixtures/certs/index.ts';

/** The simulator's finer settings, passed through to every server (see `ApiserverInstanceOptions`). */
export type SimulatorOptions = Omit<ApiserverClusterOptions, 'hosts' | 'port' | 'pki' | 'tls' | 'tokens' | 'h2' | 'anonymous'>;

/** Options of {@link startApiservers}. Every one is optional. */
export interface StartApiserversOptions {
  /** How many apiservers. Default 3, on 127.0.0.2, 127.0.0.3, 127.0.0.4 (up to 253: 127.0.0.254). */
  count?: number;
  /**
   * The loopback address of each server (they share one port, as real apiservers do). Default
   * 127.0.0.2 onward, `count` of them. Linux answers on all of 127.0.0.0/8; macOS only on 127.0.0.1
   * unless each extra address is aliased (`sudo ifconfig lo0 alias 127.0.0.2 up`).
   */
  hosts?: readonly string[];
  /** The port every server listens on. Default 0: a free one. */
  port?: number;
  /**
   * The CA, serving and client certificates. Default: made now (`generatePki()`, needs `jsrsasign`),
   * the serving certificate covering `hosts` and the names kubeadm issues (`kubernetes.default.svc`, …).
   */
  pki?: Pki;
  /** The bearer token the servers accept (user `sim-admin`, allowed everything) and the kubeconfig carries. Default: a random one. */
  token?: string;
  /** How the kubeconfig authenticates and what it points at. Default: the token, the first server's URL, the CA. */
  kubeconfig?: KubeconfigOptions;
  /** Where to write the kubeconfig (created, never overwritten; removed by `close()`). Default: a file in a new temporary directory. */
  kubeconfigPath?: string;
  /** Offer HTTP/2 (with HTTP/1.1 as fallback), as kube-apiserver does. Default true. */
  h2?: boolean;
  /** What requests without credentials may do: `public-info` (health checks and `/version`; the default), `all`, or `none`. */
  anonymous?: AnonymousAccess;
  /** Finer simulator settings (watch cache size, idle timeout, lease TTL, a fake clock's `now`, …). Default `{}`. */
  simulator?: SimulatorOptions;
}

/** One simulated apiserver, with the failures a test can put it through. */
export interface SimulatedApiserver {
  /** `apiserver-1`, `apiserver-2`, … in the order of `hosts`. */
  readonly name: string;
  /** Its address, e.g. `127.0.0.2`. */
  readonly host: string;
  /** The port all servers share. */
  readonly port: number;
  /** `host:port`, as a `static:` target lists it. */
  readonly address: string;
  /** `https://host:port`. */
  readonly url: string;
  /** `running`, `terminating`, `draining`, `stopped`, `crashed`, … */
  readonly state: InstanceState;
  /** Requests it has received (rejected ones included) since it started. */
  readonly requests: number;
  /** The simulator's instance itself: every mode (`setModes`), counters and the log of requests. */
  readonly instance: ApiserverInstance;
  /** Crashes it: every connection reset, new ones refused, gone from the `default/kubernetes` EndpointSlice. */
  crash(): Promise<void>;
  /** Starts it again on the same address and port (a running one is first shut down gracefully); resolves once it is ready. */
  restart(): Promise<void>;
  /**
   * Shuts it down as kube-apiserver does on SIGTERM: `/readyz` fails and it leaves the EndpointSlice
   * at once, then new requests get 503 "apiserver is shutting down" (429 with `sendRetryAfter`)
   * while in-flight ones finish. Resolves when it has stopped; `restart()` brings it back.
   */
  drain(options?: ShutdownOptions): Promise<void>;
  /** Adds `ms` of latency before every request it handles (0: none again). */
  slow(ms: number): void;
  /** Black-holes it (`true`, the default): connections are accepted and never answered. `false` ends it. */
  blackHole(on?: boolean): void;
}

/** What {@link startApiservers} started. `close()` it when done. */
export interface Apiservers {
  /** The kubeconfig (YAML) for `KubeConfig.loadFromString()`; its server is the first apiserver. */
  readonly kubeconfig: string;
  /** The same kubeconfig, written to this file (mode 0600), e.g. for `KUBECONFIG` or kubectl. */
  readonly kubeconfigPath: string;
  /** `static:///127.0.0.2:port,127.0.0.3:port,…`: every server, as `createBalancer({ target })` takes it. */
  readonly target: string;
  /** The kubeconfig's server URL. */
  readonly server: string;
  /** The CA certificate (PEM) the servers' certificates chain to, for `tls: { ca }`. */
  readonly ca: string;
  /** The bearer token the servers accept. */
  readonly token: string;
  /** `{ authorization: 'Bearer …' }` for raw requests. */
  readonly authHeaders: { authorization: string };
  /** The servers, in the order of `hosts`. */
  readonly servers: readonly SimulatedApiserver[];
  /** The whole simulator (shared store, `addInstance`, `blockEvictions`, …) for what the rest does not cover. */
  readonly cluster: ApiserverCluster;
  /** Stops every server and removes the kubeconfig file. Safe to call twice. */
  close(): Promise<void>;
}
