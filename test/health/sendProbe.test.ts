// One probe on one endpoint's pool, read as a verdict; a fake dispatcher stands for the pool.
import test from 'ava';
import type { Dispatcher } from 'undici';
import { Endpoint } from '../../src/balancer/Endpoint.ts';
import type { Clock } from '../../src/clock.ts';
import { OutcomeJudge } from '../../src/health/OutcomeJudge.ts';
import type { ProbeSettings } from '../../src/health/Prober.ts';
import { MAX_PROBE_BODY, ProbeSender, type ProbeDispatcher, type ProbeRequest } from '../../src/health/sendProbe.ts';
import { FakeClock } from '../helpers/FakeClock.ts';

const SETTINGS: ProbeSettings = { path: '/readyz', intervalMs: 2000, timeoutMs: 1000, headers: { authorization: 'Bearer t' } };
const ORIGIN = new URL('https://kubernetes.default.svc:443');

/** One probe as the fake pool holds it: its handler, and the controller undici would give it. */
interface Exchange {
  handler: Dispatcher.DispatchHandler;
  controller: Dispatcher.DispatchController;
  /** Why it was aborted, if it was. */
  aborted: Error | undefined;
}

/**
 * `answer` decides each probe: a status (sent as headers, one piece of body, the end, each on its
 * own turn), or a rejection (sent as undici's error); `manual` leaves the probe to the test.
 */
function setup(answer: ((options: ProbeRequest) => Promise<number>) | 'manual', clock: Clock = new FakeClock()) {
  const endpoint = new Endpoint({ address: '10.0.0.1', port: 6443 }, -Infinity);
  const lag = { ms: 0, maxSince: () => lag.ms };
  const noVerdict = { releaseProbation() {}, connectFailure() {}, serverError() {}, shuttingDown() {}, throttled() {}, success() {} };
  const judge = new OutcomeJudge(noVerdict, { connectTimeout: 1000, pingInterval: 5000 }, clock, lag, { earned() {}, refresh() {} });
  const warnings: string[] = [];
  const state = { closed: false };
  const sent: ProbeRequest[] = [];
  const exchanges: Exchange[] = [];
  let ended = 0;
  const pool: ProbeDispatcher = {
    dispatch: (options, handler) => {
      sent.push(options);
      const exchange: Exchange = {
        handler,
        aborted: undefined,
        controller: {
          get aborted() {
            return exchange.aborted !== undefined;
          },
          paused: false,
          reason: null,
          abort: (reason) => {
            exchange.aborted = reason;
            handler.onResponseError?.(exchange.controller, reason);
          },
          pause() {},
          resume() {},
        },
      };
      exchanges.push(exchange);
      if (answer === 'manual') return true;
      handler.onRequestStart?.(exchange.controller, null);
      void answer(options).then(
        async (statusCode) => {
          handler.onResponseStart?.(exchange.controller, statusCode, {}, '');
          await Promise.resolve();
          handler.onResponseData?.(exchange.controller, Buffer.from('ok'));
          await Promise.resolve();
          ended++;
          handler.onResponseEnd?.(exchange.controller, {});
        },
        (error: Error) => handler.onResponseError?.(exchange.controller, error),
      );
      return true;
    },
  };
  const sender = new ProbeSender(judge, clock, (m) => warnings.push(m), () => state.closed);
  const looked = { up: 0 };
  const send = (settings = SETTINGS, ip = false) =>
    sender.send(endpoint, settings, () => {
      looked.up++;
      return { origin: ORIGIN, sni: ip ? undefined : 'kubernetes.default.svc', pool };
    });
  return { clock, endpoint, lag, warnings, state, sent, exchanges, send, looked, ended: () => ended };
}

/** Lets the probe's awaits (the headers, then the dispatch) run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

const failing = (code: string, message = code) => () => Promise.reject(Object.assign(new Error(message), { code }));

test('a 2xx/3xx passes, other statuses fail; the body is read and the answer marks the endpoint', async (t) => {
  for (const [status, verdict] of [[200, 'pass'], [302, 'pass'], [500, 'fail'], [404, 'fail']] as const) {
    const { clock, endpoint, sent, send, ended } = setup(() => Promise.resolve(status));
    t.is(await send(), verdict);
    t.is(ended(), 1, 'the verdict waits for the end of the body');
    t.is(endpoint.lastAnswerAt, clock.now());
    t.like(sent[0], { path: '/readyz', method: 'GET', servername: 'kubernetes.default.svc' });
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

test('undici keeps no time for a probe: its headers and body timeouts are off (a stream timeout would PING and may reset the whole HTTP/2 connection)', async (t) => {
  const { sent, send } = setup(() => Promise.resolve(200));
  await send();
  t.like(sent[0], { headersTimeout: 0, bodyTimeout: 0 });
});

test('the deadline starts when the request is written to a connection, not while one is set up', async (t) => {
  const clock = new FakeClock();
  const { exchanges, send } = setup('manual', clock);
  const verdict = send();
  await settle();
  const exchange = exchanges[0]!;
  clock.advance(5_000);
  t.is(clock.pending, 0, 'no timer while connecting: that is connectTimeout\'s');
  exchange.handler.onRequestStart?.(exchange.controller, null);
  clock.advance(999);
  t.is(exchange.aborted, undefined);
  clock.advance(1);
  t.regex(String(exchange.aborted?.message), /no answer for 1000 ms/);
  // undici fails the requests queued on a client with an abort's reason unless it is informational.
  t.is((exchange.aborted as { code?: unknown } | undefined)?.code, 'UND_ERR_INFO');
  t.is(await verdict, 'unreachable');
  t.is(clock.pending, 0);
});

test('the headers must come within the timeout, then no piece of the body may be later than the timeout after the one before', async (t) => {
  const clock = new FakeClock();
  const { exchanges, send, endpoint } = setup('manual', clock);
  const verdict = send();
  await settle();
  const { handler, controller } = exchanges[0]!;
  handler.onRequestStart?.(controller, null);
  clock.advance(600);
  handler.onResponseStart?.(controller, 200, {}, '');
  t.is(endpoint.lastAnswerAt, clock.now(), 'the headers move the progress clock');
  clock.advance(600);
  handler.onResponseData?.(controller, Buffer.from('o'));
  clock.advance(600);
  t.is(exchanges[0]!.aborted, undefined, '1.8 s in, never 1 s silent');
  handler.onResponseData?.(controller, Buffer.from('k'));
  handler.onResponseEnd?.(controller, {});
  t.is(await verdict, 'pass');
  t.is(endpoint.lastAnswerAt, clock.now());
  t.is(clock.pending, 0, 'the timer is released with the answer');

  const silent = setup('manual', clock);
  const failed = silent.send();
  await settle();
  const stuck = silent.exchanges[0]!;
  stuck.handler.onRequestStart?.(stuck.controller, null);
  clock.advance(500);
  stuck.handler.onResponseStart?.(stuck.controller, 200, {}, '');
  clock.advance(1000);
  t.truthy(stuck.aborted, 'a body silent for the timeout');
  t.is(await failed, 'unreachable');
  t.is(clock.pending, 0);
});

test('the whole exchange ends within two timeouts: a body that keeps coming ends the probe, with no verdict (bytes came: no black hole)', async (t) => {
  const clock = new FakeClock();
  const { exchanges, send, endpoint } = setup('manual', clock);
  const verdict = send();
  await settle();
  const { handler, controller } = exchanges[0]!;
  const start = clock.now();
  handler.onRequestStart?.(controller, null);
  handler.onResponseStart?.(controller, 200, {}, '');
  for (let i = 0; i < 10 && !exchanges[0]!.aborted; i++) {
    clock.advance(500);
    handler.onResponseData?.(controller, Buffer.from('.'));
  }
  t.is(clock.now() - start, 2_000, 'aborted at two timeouts');
  t.regex(exchanges[0]!.aborted!.message, /no end within 2000 ms/);
  handler.onResponseError?.(controller, exchanges[0]!.aborted!);
  t.is(await verdict, undefined);
  t.is(endpoint.lastAnswerAt, clock.now());
  t.is(clock.pending, 0);
});

test('a probe reads at most 64 KiB of body: beyond, the status decides and the rest is dropped', async (t) => {
  const clock = new FakeClock();
  const { exchanges, send } = setup('manual', clock);
  const verdict = send();
  await settle();
  const { handler, controller } = exchanges[0]!;
  handler.onRequestStart?.(controller, null);
  handler.onResponseStart?.(controller, 200, {}, '');
  handler.onResponseData?.(controller, Buffer.alloc(MAX_PROBE_BODY));
  t.is(exchanges[0]!.aborted, undefined);
  handler.onResponseData?.(controller, Buffer.from('!'));
  t.truthy(exchanges[0]!.aborted);
  t.is(await verdict, 'pass');
  t.is(clock.pending, 0);
});

test('an error from undici releases the timer and is read as before (a reset after connecting is unreachable)', async (t) => {
  const clock = new FakeClock();
  const { exchanges, send } = setup('manual', clock);
  const verdict = send();
  await settle();
  const { handler, controller } = exchanges[0]!;
  handler.onRequestStart?.(controller, null);
  handler.onResponseError?.(controller, Object.assign(new Error('reset'), { code: 'ECONNRESET' }));
  t.is(await verdict, 'unreachable');
  t.is(clock.pending, 0);
});

test('a deadline that fires late (our own stall) looks once more after what came meanwhile is read', async (t) => {
  const fake = new FakeClock();
  // A clock whose timers run `late` ms after they were due, as a stalled process's do.
  let late = 0;
  const clock: Clock = { now: () => fake.now() + late, setTimeout: (callback, ms) => fake.setTimeout(callback, ms), clearTimeout: (timer) => fake.clearTimeout(timer) };
  const { exchanges, send } = setup('manual', clock);
  const verdict = send();
  await settle();
  const { handler, controller } = exchanges[0]!;
  handler.onRequestStart?.(controller, null);
  late = 1_500;
  fake.advance(1_000);
  t.is(exchanges[0]!.aborted, undefined, 'not aborted before the answer that waited is read');
  handler.onResponseStart?.(controller, 200, {}, '');
  handler.onResponseEnd?.(controller, {});
  t.is(await verdict, 'pass');
  t.is(fake.pending, 0);

  const nothing = setup('manual', clock);
  const none = nothing.send();
  await settle();
  const quiet = nothing.exchanges[0]!;
  late = 0;
  quiet.handler.onRequestStart?.(quiet.controller, null);
  late = 1_500;
  fake.advance(1_000);
  fake.advance(1);
  t.truthy(quiet.aborted, 'nothing came: aborted at the second look');
  nothing.lag.ms = 1_500;
  t.is(await none, undefined, 'and our stall explains the timeout');
});

test('a probe undici sends again (a GOAWAY refused it) starts its time afresh with its new controller, and runs one timer', async (t) => {
  const clock = new FakeClock();
  const { exchanges, send } = setup('manual', clock);
  const verdict = send();
  await settle();
  const { handler, controller: first } = exchanges[0]!;
  handler.onRequestStart?.(first, null);
  clock.advance(800);
  let again: Error | undefined;
  const second = { ...first, abort: (reason: Error) => ((again = reason), handler.onResponseError?.(second, reason)) } as Dispatcher.DispatchController;
  handler.onRequestStart?.(second, null);
  t.is(clock.pending, 1);
  clock.advance(999);
  t.is(again, undefined);
  t.is(exchanges[0]!.aborted, undefined, 'the first controller is done with');
  clock.advance(1);
  t.truthy(again);
  t.is(await verdict, 'unreachable');
  t.is(clock.pending, 0);
});
