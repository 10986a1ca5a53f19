import { endpointKey, type EndpointAddress, type Resolver, type ResolverListener } from './Resolver.ts';

interface Link {
  readonly resolver: Resolver;
  readonly name: string;
  started: boolean;
  set: readonly EndpointAddress[] | undefined;
  /** Has failed without ever listing endpoints. */
  failed: boolean;
  lastWarning: string | undefined;
}

/**
 * Several ways to find the apiservers, in order of preference (`['dns+srv:///…',
 * 'kubernetes:///default/kubernetes']`): the first that lists endpoints is used. A later one is
 * started only once every earlier one has failed without listing any, and stopped again as soon as
 * an earlier one lists some. The last resort (the configured server itself) runs from the start and
 * stays in the set one priority level below everything else, so requests can go out before
 * discovery answers and still have somewhere to go if every discovered endpoint is unreachable.
 */
export class ChainResolver implements Resolver {
  readonly #links: Link[];
  readonly #lastResort: Resolver | undefined;
  #lastResortSet: readonly EndpointAddress[] | undefined;
  #lastResortFailed = false;
  #listener: ResolverListener | undefined;
  #published: string | undefined;
  #closed = false;

  constructor(resolvers: ReadonlyArray<{ resolver: Resolver; name: string }>, lastResort?: Resolver) {
    this.#links = resolvers.map(({ resolver, name }) => ({ resolver, name, started: false, set: undefined, failed: false, lastWarning: undefined }));
    this.#lastResort = lastResort;
  }

  start(listener: ResolverListener): void {
    this.#listener = listener;
    // A target that answers at once (static:) is published before the last resort alone ever is.
    this.#startLink(0);
    this.#lastResort?.start(
      this.#inner(
        (set) => {
          if (this.#closed) return;
          this.#lastResortSet = set;
          this.#publish();
        },
        (error) => {
          this.#lastResortFailed = this.#lastResortSet === undefined;
          this.#failed(undefined, error);
        },
      ),
    );
  }

  refresh(): void {
    for (const link of this.#links) if (link.started) link.resolver.refresh?.();
    this.#lastResort?.refresh?.();
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#links.filter((l) => l.started).map((l) => l.resolver.close?.()), this.#lastResort?.close?.()]);
  }

  #startLink(index: number): void {
    const link = this.#links[index];
    if (!link || link.started || this.#closed) return;
    link.started = true;
    link.resolver.start(
      this.#inner(
        (set) => {
          if (this.#closed || !link.started || set.length === 0) return;
          link.set = set;
          // Later ways are no longer needed: this one keeps its set even when it fails from now on.
          this.#links.slice(index + 1).forEach((later) => this.#stop(later));
          this.#publish();
        },
        (error) => {
          if (this.#closed || !link.started) return;
          if (link.set === undefined) {
            link.failed = true;
            this.#startLink(index + 1);
          }
          this.#failed(link, error);
        },
      ),
    );
  }

  /**
   * The listener an inner resolver gets: the chain decides what its sets and errors mean; every
   * optional hook (warnings, DNS query counts) goes straight on, or it would be lost inside a chain.
   */
  #inner(endpoints: ResolverListener['endpoints'], error: ResolverListener['error']): ResolverListener {
    return {
      endpoints,
      error,
      warning: (message) => this.#listener?.warning?.(message),
      dnsQuery: (result) => this.#listener?.dnsQuery?.(result),
    };
  }

  #stop(link: Link): void {
    if (!link.started) return;
    link.started = false;
    link.set = undefined;
    link.failed = false;
    void link.resolver.close?.();
  }

  #primary(): Link | undefined {
    return this.#links.find((link) => link.set !== undefined);
  }

  /**
   * Errors of the way in use reach the balancer as resolver errors. Those of a preferred way that
   * still finds nothing are warnings (it keeps trying), each message once in a row.
   */
  #failed(link: Link | undefined, error: Error): void {
    if (this.#closed) return;
    const listener = this.#listener;
    if (!listener) return;
    if (this.#published === undefined) {
      // Held back while another way may still answer: the balancer fails waiting requests on an error.
      if (this.#exhausted()) listener.error(error);
      return;
    }
    const primary = this.#primary();
    if (link === primary || (link === undefined && primary === undefined)) {
      listener.error(error);
      return;
    }
    const message = `${link?.name ?? 'server'}: ${error.message}`;
    if (link && link.lastWarning === message) return;
    if (link) link.lastWarning = message;
    listener.warning?.(message);
  }

  /** Every way has been tried and failed, and the last resort (if any) has nothing either. */
  #exhausted(): boolean {
    const lastResortDone = this.#lastResort === undefined || this.#lastResortFailed;
    return lastResortDone && this.#links.every((link) => link.failed && link.set === undefined);
  }

  #publish(): void {
    const listener = this.#listener;
    if (!listener) return;
    const primary = this.#primary()?.set ?? [];
    const fallback = this.#lastResortSet ?? [];
    let set: EndpointAddress[];
    if (primary.length === 0) {
      set = [...fallback];
    } else {
      const keys = new Set(primary.map(endpointKey));
      const below = Math.max(...primary.map((e) => e.priority ?? 0)) + 1;
      set = [...primary, ...fallback.filter((e) => !keys.has(endpointKey(e))).map((e) => ({ ...e, priority: below }))];
    }
    if (set.length === 0) return;
    const signature = set.map((e) => `${endpointKey(e)}/${e.weight ?? 1}/${e.priority ?? 0}`).join(',');
    if (signature === this.#published) return;
    this.#published = signature;
    listener.endpoints(set);
  }
}
