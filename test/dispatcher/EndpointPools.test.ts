// Issue 12, defect 3: pools are keyed by what they depend on (a string), not by a Route object
// that a cleared cache makes anew, and bounded per endpoint, the evicted ones closed.
import test from 'ava';
import { Endpoint } from '../../src/balancer/Endpoint.ts';
import { EndpointPools } from '../../src/dispatcher/EndpointPools.ts';
import type { Route } from '../../src/net/tls.ts';
import { TlsState } from '../../src/net/TlsState.ts';
import type { UndiciModule } from '../../src/options/BalancerOptions.ts';

/** A stand-in for undici's Pool that counts what is open: a unit test of EndpointPools alone. */
class CountingPool {
  static open = 0;
  static created = 0;
  #closed = false;
  constructor() {
    CountingPool.open++;
    CountingPool.created++;
  }
  on(): this {
    return this;
  }
  close(): Promise<void> {
    if (!this.#closed) CountingPool.open--;
    this.#closed = true;
    return Promise.resolve();
  }
  destroy(): Promise<void> {
    return this.close();
  }
}

function route(i: number, legacy = false): Route {
  const host = `o${i}.example.test:443`;
  return { key: `https://${host} kubernetes - ${legacy ? 'h1' : 'h2'}`, protocol: 'https:', host, hostHeaders: { host }, verification: { name: 'kubernetes', sni: 'kubernetes' }, http1Only: legacy };
}

test('20k distinct routes on 3 endpoints keep at most 8 pools per endpoint open; the same route by value reuses its pool', async (t) => {
  const undici = { Pool: CountingPool, Agent: CountingPool, Dispatcher1Wrapper: CountingPool } as unknown as UndiciModule;
  const pools = new EndpointPools(undici, { connectTimeout: 1000, keepAliveTimeout: 1000, pingInterval: 0 }, new TlsState({ rejectUnauthorized: true }), () => {});
  const endpoints = [1, 2, 3].map((n) => new Endpoint({ address: `127.0.0.${n + 1}`, port: 6443 }, 0));
  let peak = 0;
  for (let i = 0; i < 20_000; i++) {
    pools.get(endpoints[i % 3]!, route(i));
    await Promise.resolve();
    peak = Math.max(peak, CountingPool.open);
  }
  t.true(peak <= 3 * 9, `peak ${peak}`);
  t.true(CountingPool.open <= 3 * 8, `open ${CountingPool.open}`);
  // A Route made anew with the same values is the same pool.
  const created = CountingPool.created;
  const a = pools.get(endpoints[0]!, route(-1));
  const b = pools.get(endpoints[0]!, { ...route(-1) });
  t.is(a, b);
  t.is(CountingPool.created, created + 1);
  await pools.close();
  t.is(CountingPool.open, 0);
});
