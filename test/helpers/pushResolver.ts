import type { TestServer } from '../../fixtures/server/TestServer.ts';
import type { EndpointAddress, ResolverListener } from '../../src/resolver/Resolver.ts';

export interface PushResolver {
  start(listener: ResolverListener): void;
  /** Reports a new endpoint set. */
  push(set: EndpointAddress[]): void;
  /** The balancer's listener once started, for what else a resolver reports: errors, warnings, DNS queries. */
  listener: ResolverListener | undefined;
}

/** A resolver the test drives; it reports `initial` when started, and nothing if none is given. */
export function pushResolver(initial?: EndpointAddress[]): PushResolver {
  const resolver: PushResolver = {
    listener: undefined,
    start(listener) {
      resolver.listener = listener;
      if (initial) listener.endpoints(initial);
    },
    push(set) {
      resolver.listener?.endpoints(set);
    },
  };
  return resolver;
}

/** A test server as an endpoint address. */
export const addressOf = (server: TestServer): EndpointAddress => ({ address: server.host, port: server.port });
