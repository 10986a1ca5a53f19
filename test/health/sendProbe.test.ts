// One probe on one endpoint's pool, read as a verdict; a fake dispatcher stands for the pool.
import test from 'ava';
import { Endpoint } from '../../src/balancer/Endpoint.ts';
import { OutcomeJudge } from '../../src/health/OutcomeJudge.ts';
import type { ProbeSettings } from '../../src/health/Prober.ts';
import { ProbeSender, type ProbeDispatcher, type ProbeRequest } from '../../src/health/sendProbe.ts';
import { FakeClock } from '../helpers/FakeClock.ts';

const SETTINGS: ProbeSettings = { path: '/readyz', intervalMs: 2000, timeoutMs: 1000, headers: { authorization: 'Bearer t' } };
const ORIGIN = new URL('https://kubernetes.default.svc:443');

function setup(answer: (options: ProbeRequest) => Promise<number>) {
  const clock = new FakeClock();
  const endpoint = new Endpoint({ address: '10.0.0.1', port: 6443 }, -Infinity);
  const lag = { ms: 0, maxSince: () => lag.ms };
  const noVerdict = { releaseProbation() {}, connectFailure() {}, serverError() {}, shuttingDown() {}, throttled() {}, success() {} };
  const judge = new OutcomeJudge(noVerdict, { connectTimeout: 1000, pingInterval: 5000 }, clock, lag, { earned() {}, refresh() {} });
  const warnings: string[] = [];
  const state = { closed: false };
  const sent: ProbeRequest[] = [];
  let dumped = 0;
  const pool: ProbeDispatcher = {
    request: async (options) => {
      sent.push(options);
      const statusCode = await answer(options);
      return { statusCode, body: { dump: () => Promise.resolve(void dumped++) } };
    },
  };
  const sender = new ProbeSender(judge, clock, (m) => warnings.push(m), () => state.closed);
  const looked = { up: 0 };
  const send = (settings = SETTINGS, ip = false) =>
    sender.send(endpoint, settings, () => {
      looked.up++;
      return { origin: ORIGIN, sni: ip ? undefined : 'kubernetes.default.svc', pool };
    });
  return { clock, endpoint, lag, warnings, state, sent, send, looked, dumped: () => dumped };
}

const failing = (code: string, message = code) => () => Promise.reject(Object.assign(new Error(message), { code }));

test('a 2xx/3xx passes, other statuses fail; the body is read and the answer marks the endpoint', async (t) => {
  for (const [status, verdict] of [[200, 'pass'], [302, 'pass'], [500, 'fail'], [404, 'fail']] as const) {
    const { clock, endpoint, sent, send, dumped } = setup(() => Promise.resolve(status));
    t.is(await send(), verdict);
    t.is(dumped(), 1);
    t.is(endpoint.lastAnswerAt, clock.now());
    t.like(sent[0], { path: '/readyz', method: 'GET', headersTimeout: 1000, bodyTimeout: 1000, servername: 'kubernetes.default.svc' });
    t.deepEqual(sent[0]!.headers, { authorization: 'Bearer t', host: 'kubernetes.default.svc' });
  }
});

test('an IP origin sends no servername', async (t) => {
  const { sent, send } = setup(() => Promise.resolve(200));
  await send(SETTINGS, true);
  t.false('servername' in sent[0]!);
});

test('401 and 403 count as alive, with one warning to set probe.headers', async (t) => {
  const { warnings, send } = setup(() => Promise.resolve(401));
  t.is(await send(), 'pass');
  t.is(await send(), 'pass');
  t.is(warnings.length, 1);
  t.regex(warnings[0]!, /probe \/readyz answered 401: set probe.headers/);
});

test('headers from a function are asked for every probe; when it fails: a warning and no verdict', async (t) => {
  let calls = 0;
  const { warnings, sent, send } = setup(() => Promise.resolve(200));
  t.is(await send({ ...SETTINGS, headers: () => Promise.resolve({ authorization: `Bearer ${++calls}` }) }), 'pass');
  t.is(sent[0]!.headers && (sent[0]!.headers as Record<string, string>).authorization, 'Bearer 1');
  t.is(await send({ ...SETTINGS, headers: () => Promise.reject(new Error('exec plugin failed')) }), undefined);
  t.deepEqual(warnings, ['probe headers: exec plugin failed']);
  t.is(sent.length, 1);
});

test('the endpoint removed or the balancer closed while headers were read: nothing sent, no verdict', async (t) => {
  const removed = setup(() => Promise.resolve(200));
  removed.endpoint.removed = true;
  t.is(await removed.send(), undefined);
  t.is(removed.sent.length, 0);
  const closed = setup(() => Promise.resolve(200));
  closed.state.closed = true;
  t.is(await closed.send(), undefined);
  t.is(closed.sent.length, 0);
});

test('where the probe goes is looked up once its headers are read (reading them may rotate the credentials, closing the pools), and not at all when nothing is sent', async (t) => {
  let release!: () => void;
  const read = new Promise<void>((resolve) => (release = resolve));
  const { sent, send, looked, endpoint } = setup(() => Promise.resolve(200));
  const settings = { ...SETTINGS, headers: async () => (await read, { authorization: 'Bearer t' }) };
  const probe = send(settings);
  await new Promise((resolve) => setImmediate(resolve));
  t.is(looked.up, 0, 'not while the headers are being read');
  release();
  t.is(await probe, 'pass');
  t.is(looked.up, 1);
  t.is(sent.length, 1);
  endpoint.removed = true;
  t.is(await send(), undefined);
  t.is(looked.up, 1, 'no pool looked up (or made) for a removed endpoint');
});

test('connect and TLS failures are reported as such', async (t) => {
  t.is(await setup(failing('ECONNREFUSED')).send(), 'connect');
  t.is(await setup(failing('ERR_TLS_CERT_ALTNAME_INVALID')).send(), 'tls');
});

test('a probe timeout is unreachable unless our own stall or a recent answer explains it', async (t) => {
  t.is(await setup(failing('UND_ERR_HEADERS_TIMEOUT')).send(), 'unreachable');
  const stalled = setup(failing('UND_ERR_HEADERS_TIMEOUT'));
  stalled.lag.ms = SETTINGS.timeoutMs / 4;
  t.is(await stalled.send(), undefined);
  const answered = setup(failing('UND_ERR_BODY_TIMEOUT'));
  answered.endpoint.lastAnswerAt = answered.clock.now() - SETTINGS.timeoutMs + 1;
  t.is(await answered.send(), undefined);
});

test('a connect timeout is unreachable when conclusive, no verdict during our stall', async (t) => {
  t.is(await setup(failing('UND_ERR_CONNECT_TIMEOUT')).send(), 'unreachable');
  const stalled = setup(failing('UND_ERR_CONNECT_TIMEOUT'));
  stalled.lag.ms = 250;
  t.is(await stalled.send(), undefined);
});

test('a broken connection after connecting is unreachable', async (t) => {
  t.is(await setup(failing('ECONNRESET')).send(), 'unreachable');
});
