import { sendJson, type Request, type Response, type TestServer } from '../../fixtures/server/TestServer.ts';

/**
 * A server handler: 429s from API Priority and Fairness with `Retry-After: 60` at the servers in
 * `throttled`, 200 elsewhere. The long Retry-After keeps a throttled endpoint ejected for the whole
 * test, however slow the machine (the test server's own `apfFraction` says 1 s).
 */
export function apfThrottle(): { throttled: Set<TestServer>; rejected: () => number; handler: (req: Request, res: Response, server: TestServer) => void } {
  const throttled = new Set<TestServer>();
  let rejected = 0;
  return {
    throttled,
    rejected: () => rejected,
    handler: (_req, res, server) => {
      if (!throttled.has(server)) return sendJson(res, 200, { kind: 'Status' });
      rejected++;
      sendJson(res, 429, { kind: 'Status', code: 429, reason: 'TooManyRequests' }, { 'retry-after': '60', 'x-kubernetes-pf-flowschema-uid': 'x', 'x-kubernetes-pf-prioritylevel-uid': 'y' });
    },
  };
}
