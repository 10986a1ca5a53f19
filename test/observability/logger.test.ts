import { Console } from 'node:console';
import { Writable } from 'node:stream';
import test from 'ava';
import * as undici from 'undici';
import { certs } from '../../fixtures/certs/index.ts';
import { startServers, staticTarget } from '../../fixtures/server/TestServer.ts';
import { BalancerError, createBalancer, type Logger } from '../../src/index.ts';
import { ORIGIN } from '../helpers/balancer.ts';
import { apfThrottle } from '../helpers/throttle.ts';
import { until } from '../helpers/poll.ts';
import { pushResolver } from '../helpers/pushResolver.ts';


type Call = [level: keyof Logger, fields: Record<string, unknown>, message: string | undefined];

/** A pino-shaped logger that records its calls. */
function recorder(): { logger: Logger; calls: Call[] } {
  const calls: Call[] = [];
  const method = (level: keyof Logger) => (fields: Record<string, unknown>, message?: string) => void calls.push([level, fields, message]);
  return { logger: { debug: method('debug'), info: method('info'), warn: method('warn'), error: method('error') }, calls };
}

test('the logger gets endpoint changes (info), ejections and drains (warn), retries (debug)', async (t) => {
  const { throttled, handler } = apfThrottle();
  const servers = await startServers(['127.0.0.2', '127.0.0.3', '127.0.0.4'], { handler });
  throttled.add(servers[1]!);
  servers[2]!.readyzStatus = 500;
  const { logger, calls } = recorder();
  const balancer = createBalancer({ target: staticTarget(servers), origin: ORIGIN, tls: { ca: certs.ca }, probe: { intervalMs: 50 }, logger });
  const [a, b, c] = servers.map((s) => `${s.host}:${s.port}`);
  try {
    t.deepEqual(calls[0], ['info', { event: 'endpoints', endpoints: [a, b, c] }, 'apiserver endpoints: 3']);
    await until(() => calls.some(([, f]) => f.event === 'drain'), { what: 'the failing probe to drain an endpoint' });
    for (let i = 0; i < 3; i++) await (await undici.request(`${ORIGIN}/api/v1/pods`, { dispatcher: balancer })).body.dump();
    const find = (event: string): Call | undefined => calls.find(([, f]) => f.event === event);
    t.deepEqual(find('drain'), ['warn', { event: 'drain', endpoint: c, reason: 'probe' }, `endpoint ${c} draining (failing probe)`]);
    t.deepEqual(find('eject'), ['warn', { event: 'eject', endpoint: b, reason: 'throttled', durationMs: 60_000 }, `endpoint ${b} ejected (throttled)`]);
    t.deepEqual(find('retry'), ['debug', { event: 'retry', from: b, to: a, reason: 'throttled', attempt: 2 }, `retrying on ${a} after throttled at ${b}`]);
    servers[2]!.readyzStatus = 200;
    await until(() => calls.some(([, f]) => f.event === 'restore'), { what: 'passing probes to restore it' });
    t.deepEqual(find('restore'), ['info', { event: 'restore', endpoint: c, via: 'probe' }, `endpoint ${c} restored`]);
    t.false(calls.some(([level]) => level === 'error'));
  } finally {
    await balancer.close();
    await Promise.all(servers.map((s) => s.close()));
  }
});

test('the logger gets resolver errors and warnings (warn); console passes as a logger; a bad logger is refused; silent by default', async (t) => {
  const { logger, calls } = recorder();
  const target = pushResolver([{ address: '127.0.0.9', port: 6443 }]);
  const balancer = createBalancer({ origin: ORIGIN, target, probe: false, logger });
  try {
    const error = Object.assign(new Error('DNS x SRV: TIMEOUT'), { code: 'ERR_DNS' });
    target.listener!.error(error);
    target.listener!.warning!('serving a stale answer');
    t.deepEqual(calls.slice(1), [
      ['warn', { event: 'resolver-error', err: error }, 'resolution failed, keeping the previous endpoints: DNS x SRV: TIMEOUT'],
      ['warn', { event: 'warning' }, 'serving a stale answer'],
    ]);
  } finally {
    await balancer.close();
  }
  const quiet = new Writable({ write: (_chunk, _encoding, done) => done() });
  const withConsole = createBalancer({ origin: ORIGIN, target: 'static:///127.0.0.9:6443', probe: false, logger: new Console(quiet) });
  await withConsole.close();
  t.throws(() => createBalancer({ origin: ORIGIN, target: 'static:///127.0.0.9:6443', logger: { info: () => {} } as unknown as Logger }), {
    instanceOf: BalancerError,
    code: 'ERR_INVALID_OPTION',
    message: /logger/,
  });
  const silent = createBalancer({ origin: ORIGIN, target: 'static:///127.0.0.9:6443', probe: false });
  t.deepEqual(['endpoints', 'eject', 'restore', 'drain', 'retry', 'resolver-error', 'warning'].map((e) => silent.listenerCount(e)), [0, 0, 0, 0, 0, 0, 0]);
  await silent.close();
});
