import type { TestServer } from '../../fixtures/server/TestServer.ts';
import type { EndpointAddress, ResolverListener } from '../../src/resolver/Resolver.ts';

/** A resolver the test drives: `push(set)` reports a new endpoint set. */
export function pushResolver(initial: EndpointAddress[]): { start(listener: ResolverListener): void; push(set: EndpointAddress[]): void } {
  let listener: ResolverListener | undefined;
  return {
    start(l) {
      listener = l;
      l.endpoints(initial);
    },
    push(set) {
      listener?.endpoints(set);
    },
  };
}

/** A test server as an endpoint address. */
export const addressOf = (server: TestServer): EndpointAddress => ({ address: server.host, port: server.port });
