import { endpointSignature, type EndpointAddress, type Resolver, type ResolverListener } from './Resolver.ts';
import { endpointKey } from '../net/endpointKey.ts';

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
  readonly #lastResort: Link | undefined;
  #listener: ResolverListener | undefined;
  #published: string | undefined;
  #closed = false;

  constructor(resolvers: ReadonlyArray<{ resolver: Resolver; name: string }>, lastResort?: Resolver) {
    this.#links = resolvers.map(({ resolver, name }) => newLink(resolver, name));
    this.#lastResort = lastResort && newLink(lastResort, 'server');
  }

  start(listener: ResolverListener): void {
    this.#listener = listener;
    // A target that answers at once (static:) is published before the last resort alone ever is.
    this.#startLink(0);
    if (this.#lastResort) this.#run(this.#lastResort, () => {}, () => {});
  }

  refresh(): void {
    for (const link of this.#all()) if (link.started) link.resolver.refresh?.();
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all(this.#all().filter((l) => l.started).map(async (l) => l.resolver.close?.()));
  }

  #all(): Link[] {
    return this.#lastResort ? [...this.#links, this.#lastResort] : this.#links;
  }

  #startLink(index: number): void {
    const link = this.#links[index];
    if (!link || link.started || this.#closed) return;
    this.#run(
      link,
      // Later ways are no longer needed: this one keeps its set even when it fails from now on.
      () => this.#links.slice(index + 1).forEach((later) => this.#stop(later)),
      () => this.#startLink(index + 1),
    );
  }

  /**
   * Starts `link`: `listed` runs when it lists endpoints, `foundNothing` when it fails before it ever
   * has. The chain decides what its sets and errors mean; every optional hook (warnings, DNS query
   * counts) goes straight on, or it would be lost inside a chain.
   */
  #run(link: Link, listed: () => void, foundNothing: () => void): void {
    link.started = true;
    link.resolver.start({
      endpoints: (set) => {
        if (this.#closed || !link.started || set.length === 0) return;
        link.set = set;
        listed();
        this.#publish();
      },
      error: (error) => {
        if (this.#closed || !link.started) return;
        if (link.set === undefined) {
          link.failed = true;
          foundNothing();
        }
        this.#failed(link, error);
      },
      warning: (message) => this.#listener?.warning?.(message),
      dnsQuery: (result) => this.#listener?.dnsQuery?.(result),
    });
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
  #failed(link: Link, error: Error): void {
    if (this.#closed) return;
    const listener = this.#listener;
    if (!listener) return;
    if (this.#published === undefined) {
      // Held back while another way may still answer: the balancer fails waiting requests on an error.
      if (this.#exhausted()) listener.error(error);
      return;
    }
    if (link === (this.#primary() ?? this.#lastResort)) {
      listener.error(error);
      return;
    }
    const message = `${link.name}: ${error.message}`;
    if (link.lastWarning === message) return;
    link.lastWarning = message;
    listener.warning?.(message);
  }

  /** Every way has been tried and failed, and the last resort (if any) has nothing either. */
  #exhausted(): boolean {
    return this.#all().every((link) => link.failed && link.set === undefined);
  }

  #publish(): void {
    const listener = this.#listener;
    if (!listener) return;
    const primary = this.#primary()?.set ?? [];
    const fallback = this.#lastResort?.set ?? [];
    let set: EndpointAddress[];
    if (primary.length === 0) {
      set = [...fallback];
    } else {
      const keys = new Set(primary.map(endpointKey));
      const below = Math.max(...primary.map((e) => e.priority ?? 0)) + 1;
      set = [...primary, ...fallback.filter((e) => !keys.has(endpointKey(e))).map((e) => ({ ...e, priority: below }))];
    }
    if (set.length === 0) return;
    const signature = endpointSignature(set);
    if (signature === this.#published) return;
    this.#published = signature;
    listener.endpoints(set);
  }
}

function newLink(resolver: Resolver, name: string): Link {
  return { resolver, name, started: false, set: undefined, failed: false, lastWarning: undefined };
}
