import type { EndpointAddress, Resolver, ResolverListener } from './Resolver.ts';

/** A fixed list: `static:///10.0.0.1:6443,10.0.0.2:6443` or an array of endpoints. */
export class StaticResolver implements Resolver {
  readonly #endpoints: readonly EndpointAddress[];

  constructor(endpoints: readonly EndpointAddress[]) {
    this.#endpoints = endpoints.map((e) => ({ ...e, source: 'static' }));
  }

  start(listener: ResolverListener): void {
    listener.endpoints(this.#endpoints);
  }
}
