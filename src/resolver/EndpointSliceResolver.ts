import { isIP } from 'node:net';
import { createInterface } from 'node:readline';
import { jitteredBackoff, type Clock, type ClockTimer } from '../clock.ts';
import type { ApiClient } from './ApiClient.ts';
import { endpointSignature, inKeyOrder, type EndpointAddress, type Resolver, type ResolverListener } from './Resolver.ts';
import { endpointKey } from '../net/endpointKey.ts';
import { describeDropped, unusableAddress } from './usableAddress.ts';

interface EndpointSlice {
  metadata?: { name?: string; resourceVersion?: string; labels?: Record<string, string> | null };
  addressType?: string;
  endpoints?: Array<{ addresses?: string[]; conditions?: { ready?: boolean | null } }> | null;
  ports?: Array<{ name?: string | null; port?: number | null; protocol?: string | null }> | null;
}

interface WatchEvent {
  type?: string;
  object?: EndpointSlice & { code?: number; message?: string; reason?: string };
}

/** An API answer other than the expected one; `status` 410 means the resourceVersion is gone. */
class ApiStatusError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

const LIST_TIMEOUT_MS = 10_000;
const BASE_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 30_000;
/** The server ends each watch after this long (× [1, 2), as client-go's reflector asks); then it is renewed. */
const WATCH_SECONDS = 300;
/** Earliest retry after `refresh()` asks to skip a backoff. */
const MIN_REFRESH_MS = 2_000;
const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

/**
 * Whether a slice of `default/kubernetes` is one kube-apiserver's endpoint reconciler wrote. It
 * names its slice after the Service (`kubernetes`; the dual-stack reconciler adds `kubernetes-v4`
 * or `-v6`) and sets its labels to exactly `kubernetes.io/service-name=kubernetes` on every sync
 * (kubernetes/kubernetes pkg/controlplane/reconcilers/endpointsadapter.go: `endpointSlice.Labels =
 * map[string]string{discovery.LabelServiceName: …}`), with no `endpointslice.kubernetes.io/managed-by`:
 * the Service has no selector, so the EndpointSlice controller leaves it alone, and the Endpoints
 * object carries `endpointslice.kubernetes.io/skip-mirror=true`, so the mirroring controller does
 * too. A slice with any other label (a managed-by claiming a controller included) or another name
 * was written by someone else and is not trusted to list the control plane.
 */
function writtenByControlPlane(slice: { metadata?: { name?: string; labels?: Record<string, string> | null } }): boolean {
  const name = slice.metadata?.name ?? '';
  const labels = Object.entries(slice.metadata?.labels ?? {});
  const named = name === 'kubernetes' || name.startsWith('kubernetes-');
  return named && labels.length === 1 && labels[0]![0] === SERVICE_NAME_LABEL && labels[0]![1] === 'kubernetes';
}

/**
 * `kubernetes:///<namespace>/<service>`: the apiserver endpoints as the Service's EndpointSlices
 * (label `kubernetes.io/service-name=<service>`) list them, read through the bootstrap server: a
 * list, then a watch from its resourceVersion, renewed as the server ends it; re-listed when the
 * resourceVersion is too old (410); reconnected after failures with jittered exponential backoff.
 *
 * Mapping: every endpoint whose `conditions.ready` is not false (unset counts as ready, as CoreDNS
 * and kube-proxy read it), its first address (the API calls an endpoint's addresses fungible), on
 * the slice's port named `https`, else its only port; FQDN slices are skipped, and addresses that
 * are never dialled (`unusableAddress`) too, with a warning. For `default/kubernetes` only the
 * slices the control plane writes count (`writtenByControlPlane`). A failure, and an
 * answer that lists nothing ready, leave the last set in place (before any set, listing nothing is
 * reported as an error, so that a target chain moves on).
 */
export class EndpointSliceResolver implements Resolver {
  readonly #namespace: string;
  readonly #service: string;
  readonly #api: ApiClient;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #slices = new Map<string, EndpointAddress[]>();
  #listener: ResolverListener | undefined;
  #resourceVersion: string | undefined;
  #failures = 0;
  #published = '';
  #warned = '';
  /** Ends the request under way, list or watch, on close(): either may otherwise wait out its timeout. */
  readonly #abort = new AbortController();
  #wake: (() => void) | undefined;
  #lastWake = -Infinity;
  #closed = false;
  #running: Promise<void> | undefined;

  constructor(namespace: string, service: string, api: ApiClient, clock: Clock, random: () => number = Math.random) {
    this.#namespace = namespace;
    this.#service = service;
    this.#api = api;
    this.#clock = clock;
    this.#random = random;
  }

  start(listener: ResolverListener): void {
    this.#listener = listener;
    this.#running = this.#run();
  }

  /** Skips a backoff wait (the balancer saw a connection fail: the set may be stale). */
  refresh(): void {
    if (!this.#wake || this.#clock.now() - this.#lastWake < MIN_REFRESH_MS) return;
    this.#lastWake = this.#clock.now();
    this.#wake();
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#abort.abort();
    this.#wake?.();
    await this.#running;
    await this.#api.close();
  }

  get #path(): string {
    const selector = encodeURIComponent(`kubernetes.io/service-name=${this.#service}`);
    return `/apis/discovery.k8s.io/v1/namespaces/${encodeURIComponent(this.#namespace)}/endpointslices?labelSelector=${selector}`;
  }

  async #run(): Promise<void> {
    while (!this.#closed) {
      try {
        if (this.#resourceVersion === undefined) await this.#list();
        const started = this.#clock.now();
        const events = await this.#watchOnce();
        // A watch the server ends at once, again and again, must not become a busy loop.
        if (events === 0 && this.#clock.now() - started < BASE_BACKOFF_MS) {
          this.#failures++;
          await this.#sleep(this.#backoff());
        }
      } catch (error) {
        if (this.#closed) return;
        if (error instanceof ApiStatusError && error.status === 410) {
          this.#resourceVersion = undefined;
          continue;
        }
        this.#failures++;
        this.#listener?.error(describe(error as Error, this.#namespace, this.#service));
        await this.#sleep(this.#backoff());
      }
    }
  }

  async #list(): Promise<void> {
    const res = await this.#api.get(this.#path, { headersTimeout: LIST_TIMEOUT_MS, bodyTimeout: LIST_TIMEOUT_MS, signal: this.#abort.signal });
    if (res.statusCode !== 200) throw await statusError(res.statusCode, res.body);
    const list = (await res.body.json()) as { items?: EndpointSlice[]; metadata?: { resourceVersion?: string } };
    this.#slices.clear();
    for (const slice of list.items ?? []) this.#slices.set(slice.metadata?.name ?? '', this.#addresses(slice));
    this.#resourceVersion = list.metadata?.resourceVersion ?? '';
    this.#publish();
  }

  /** Watches until the server ends the watch; returns how many events came. */
  async #watchOnce(): Promise<number> {
    const seconds = Math.floor(WATCH_SECONDS * (1 + this.#random()));
    const query = `&watch=1&allowWatchBookmarks=true&timeoutSeconds=${seconds}&resourceVersion=${encodeURIComponent(this.#resourceVersion ?? '')}`;
    // The server ends the watch after `seconds`; a connection that goes silent well past that is dead.
    const res = await this.#api.get(this.#path + query, { headersTimeout: LIST_TIMEOUT_MS, bodyTimeout: (seconds + 30) * 1000, signal: this.#abort.signal });
    if (res.statusCode !== 200) throw await statusError(res.statusCode, res.body);
    let events = 0;
    try {
      for await (const line of createInterface({ input: res.body, crlfDelay: Infinity })) {
        if (line.trim() === '') continue;
        this.#onEvent(JSON.parse(line) as WatchEvent);
        events++;
        this.#failures = 0;
      }
    } finally {
      res.body.destroy();
    }
    return events;
  }

  #onEvent(event: WatchEvent): void {
    const object = event.object ?? {};
    if (event.type === 'ERROR') {
      throw new ApiStatusError(object.code ?? 500, object.message ?? 'watch error');
    }
    if (object.metadata?.resourceVersion) this.#resourceVersion = object.metadata.resourceVersion;
    const name = object.metadata?.name ?? '';
    if (event.type === 'ADDED' || event.type === 'MODIFIED') this.#slices.set(name, this.#addresses(object));
    else if (event.type === 'DELETED') this.#slices.delete(name);
    else return;
    this.#publish();
  }

  #addresses(slice: EndpointSlice): EndpointAddress[] {
    if (slice.addressType === 'FQDN') return [];
    const where = `EndpointSlice ${this.#namespace}/${slice.metadata?.name ?? ''}`;
    if (this.#namespace === 'default' && this.#service === 'kubernetes' && !writtenByControlPlane(slice)) {
      this.#warn(`${where} was not written by the control plane (labels ${JSON.stringify(slice.metadata?.labels ?? {})}): skipped`);
      return [];
    }
    const port = pickPort(slice.ports ?? []);
    if (port === undefined) {
      this.#warn(`${where} has no port named "https" and more or fewer than one port: skipped`);
      return [];
    }
    const addresses: EndpointAddress[] = [];
    const dropped: string[] = [];
    for (const endpoint of slice.endpoints ?? []) {
      if (endpoint.conditions?.ready === false) continue;
      const address = endpoint.addresses?.[0];
      if (address === undefined || isIP(address) === 0) continue;
      const reason = unusableAddress(address);
      if (reason) dropped.push(`${address} (${reason})`);
      else addresses.push({ address, port, source: 'kubernetes' });
    }
    if (dropped.length > 0) this.#warn(`${where} lists addresses that are never dialled, left out: ${describeDropped(dropped)}`);
    return addresses;
  }

  #publish(): void {
    const unique = new Map<string, EndpointAddress>();
    for (const list of this.#slices.values()) for (const endpoint of list) unique.set(endpointKey(endpoint), endpoint);
    const set = inKeyOrder(unique.values());
    const signature = endpointSignature(set);
    if (set.length === 0) {
      const what = `the EndpointSlices of ${this.#namespace}/${this.#service} list no ready endpoint`;
      // Nothing found at all is a failure (a chain moves on to its next target); later, a blip.
      if (this.#published === '') this.#listener?.error(new Error(what));
      else this.#warn(`${what}; keeping the previous set`);
      return;
    }
    if (signature === this.#published) return;
    this.#published = signature;
    this.#listener?.endpoints(set);
  }

  #warn(message: string): void {
    if (message === this.#warned) return;
    this.#warned = message;
    this.#listener?.warning?.(message);
  }

  #backoff(): number {
    return jitteredBackoff(this.#failures, BASE_BACKOFF_MS, MAX_BACKOFF_MS, this.#random);
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        this.#clock.clearTimeout(timer);
        this.#wake = undefined;
        resolve();
      };
      const timer: ClockTimer = this.#clock.setTimeout(done, ms);
      this.#wake = done;
    });
  }
}

/** The port named `https`, else the only port. */
function pickPort(ports: NonNullable<EndpointSlice['ports']>): number | undefined {
  const chosen = ports.find((p) => p.name === 'https') ?? (ports.length === 1 ? ports[0] : undefined);
  const port = chosen?.port;
  return typeof port === 'number' && port >= 1 && port <= 65535 ? port : undefined;
}

async function statusError(status: number, body: { text(): Promise<string> }): Promise<ApiStatusError> {
  const text = await body.text().catch(() => '');
  let message = text.slice(0, 300);
  try {
    message = (JSON.parse(text) as { message?: string }).message ?? message;
  } catch {
    // not a Status object
  }
  return new ApiStatusError(status, `HTTP ${status}: ${message}`);
}

function describe(error: Error, namespace: string, service: string): Error {
  const what = `listing and watching the EndpointSlices of ${namespace}/${service}`;
  if (error instanceof ApiStatusError && error.status === 403) {
    return new Error(`${what}: forbidden; grant list and watch on discovery.k8s.io endpointslices in "${namespace}" (examples/rbac-endpointslices.yaml): ${error.message}`, { cause: error });
  }
  return new Error(`${what}: ${error.message}`, { cause: error });
}
