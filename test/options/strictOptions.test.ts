import test from 'ava';
import { certs } from '../../fixtures/certs/index.ts';
import { balancerInternals } from '../../src/dispatcher/internals.ts';
import { BalancerError, createBalancer } from '../../src/index.ts';

const target = 'static:///127.0.0.1:6443';

function optionError(options: unknown): string {
  const error = (() => {
    try {
      void createBalancer({ origin: 'https://kubernetes.default.svc', target, ...(options as object) }).close();
    } catch (err) {
      return err;
    }
    return undefined;
  })();
  if (!(error instanceof BalancerError) || error.code !== 'ERR_INVALID_OPTION') throw new Error(`expected ERR_INVALID_OPTION for ${JSON.stringify(options)}, got ${String(error)}`);
  return error.message;
}

const misspelt: Array<[unknown, string]> = [
  [{ orign: 'https://kubernetes.default.svc' }, "options.orign is not an option (did you mean 'origin'?)"],
  [{ tls: { serverName: 'kubernetes' } }, "options.tls.serverName is not an option (did you mean 'servername'?)"],
  [{ tls: { rejectUnauthorised: false } }, "options.tls.rejectUnauthorised is not an option (did you mean 'rejectUnauthorized'?)"],
  [{ connectTimout: 500 }, "options.connectTimout is not an option (did you mean 'connectTimeout'?)"],
  [{ probe: { interval: 500 } }, "options.probe.interval is not an option (did you mean 'intervalMs'?)"],
  [{ dns: { server: ['127.0.0.1'] } }, "options.dns.server is not an option (did you mean 'servers'?)"],
  [{ bootstrap: { sevrer: 'https://127.0.0.1:1' } }, "options.bootstrap.sevrer is not an option (did you mean 'server'?)"],
  [{ retryBudget: { pecrent: 10 } }, "options.retryBudget.pecrent is not an option (did you mean 'percent'?)"],
  [{ rebalanceWatches: { maxPerSec: 1 } }, "options.rebalanceWatches.maxPerSec is not an option (did you mean 'maxPerSecond'?)"],
  [{ zzz: 1 }, 'options.zzz is not an option (known keys: target, '],
];

test('an unknown key at any level is a typed error naming it and the nearest known key', (t) => {
  for (const [options, message] of misspelt) t.true(optionError(options).startsWith(message), optionError(options));
});

test('a client certificate with the key of another pair is an option error', (t) => {
  t.regex(optionError({ tls: { cert: certs.client.cert, key: certs.apiserver.key } }), /^options.tls.key is not the private key of tls.cert/);
  t.notThrows(() => void createBalancer({ origin: 'https://kubernetes.default.svc', target, tls: { cert: certs.client.cert, key: certs.client.key } }).close());
});

test('tls.servername must be a bare host name or IP address', (t) => {
  for (const servername of ['kubernetes.default.svc:6443', 'https://kubernetes', 'a b', 'bad_label-.x', '[::1]:6443', 'x'.repeat(64)]) {
    t.regex(optionError({ tls: { servername } }), /^options.tls.servername must be a host name or IP address, without a port/, servername);
  }
  for (const servername of ['kubernetes', 'kubernetes.default.svc', 'kubernetes.default.svc.', '10.96.0.1', '::1', '[::1]']) {
    t.notThrows(() => void createBalancer({ origin: 'https://kubernetes.default.svc', target, tls: { servername } }).close(), servername);
  }
});

test('TLS material handed over on rotation is checked the same way and leaves the old material in use', async (t) => {
  const balancer = createBalancer({ origin: 'https://kubernetes.default.svc', target, tls: { ca: certs.ca, cert: certs.client.cert, key: certs.client.key } });
  const internals = balancerInternals(balancer);
  const before = internals.tlsFor(new URL('https://kubernetes')).tls;
  for (const tls of [{ cert: certs.rotated.cert, key: certs.client.key }, { servername: 'kubernetes:6443' }, { serverName: 'x' }]) {
    const error = t.throws(() => internals.replaceTls(tls), { instanceOf: BalancerError });
    t.is(error?.code, 'ERR_INVALID_OPTION');
  }
  t.is(internals.tlsFor(new URL('https://kubernetes')).tls, before);
  t.true(internals.replaceTls({ ca: certs.ca, cert: certs.rotated.cert, key: certs.rotated.key }));
  await balancer.close();
});
