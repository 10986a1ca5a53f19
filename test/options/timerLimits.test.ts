import test from 'ava';
import { BalancerError, createBalancer, type BalancerOptions } from '../../src/index.ts';

// Node's timers keep a signed 32-bit millisecond count: longer delays fire after 1 ms. Every
// millisecond option, listed here by its path, must refuse them at construction.
const msOptions: Array<[string, (ms: number) => Partial<BalancerOptions>]> = [
  ['connectTimeout', (ms) => ({ connectTimeout: ms })],
  ['keepAliveTimeout', (ms) => ({ keepAliveTimeout: ms })],
  ['pingInterval', (ms) => ({ pingInterval: ms })],
  ['requestTimeout', (ms) => ({ requestTimeout: ms })],
  ['baseEjectionMs', (ms) => ({ baseEjectionMs: ms, maxEjectionMs: ms })],
  ['maxEjectionMs', (ms) => ({ maxEjectionMs: ms })],
  ['slowStartMs', (ms) => ({ slowStartMs: ms })],
  ['probe.intervalMs', (ms) => ({ probe: { intervalMs: ms } })],
  ['probe.timeoutMs', (ms) => ({ probe: { timeoutMs: ms } })],
  ['dns.timeout', (ms) => ({ dns: { timeout: ms } })],
  ['dns.minTtl', (ms) => ({ dns: { minTtl: ms, maxTtl: ms } })],
  ['dns.maxTtl', (ms) => ({ dns: { maxTtl: ms } })],
  ['dns.maxStale', (ms) => ({ dns: { maxStale: ms } })],
  ['rebalanceWatches.graceMs', (ms) => ({ rebalanceWatches: { graceMs: ms } })],
  ['hedge.minDelayMs', (ms) => ({ hedge: { minDelayMs: ms, maxDelayMs: ms } })],
  ['hedge.maxDelayMs', (ms) => ({ hedge: { maxDelayMs: ms } })],
];

const target = 'static:///127.0.0.1:6443';

test('every millisecond option past 2^31-1 ms is a typed error naming the field', (t) => {
  for (const [field, options] of msOptions) {
    for (const ms of [2 ** 31, 1e10, 1e12]) {
      const error = t.throws(() => createBalancer({ origin: 'https://kubernetes.default.svc', target, ...options(ms) }), { instanceOf: BalancerError }, `${field} = ${ms}`);
      t.is(error?.code, 'ERR_INVALID_OPTION');
      t.true(error?.message.startsWith(`options.${field} must be`), `${field}: ${error?.message}`);
    }
  }
});

test('millisecond options up to the timer limit are accepted where their own range allows', async (t) => {
  for (const [field, options] of msOptions) {
    // pingInterval has its own bound (one hour); the rest take anything up to the timer limit.
    const ms = field === 'pingInterval' ? 3_600_000 : 2 ** 31 - 1;
    const balancer = createBalancer({ origin: 'https://kubernetes.default.svc', target, ...options(ms) });
    await balancer.close();
    t.pass(field);
  }
});
