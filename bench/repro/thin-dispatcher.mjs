// The floor of any balancer written as an undici Dispatcher: the thinnest one in front of a Pool,
// one endpoint, no feature at all — a copy of the request's options with the Host header, and one
// forwarding handler per request. It has `createBalancer` (the options `bench/dispatch.ts` passes:
// origin, target `static:///host:port`, tls.ca), so the CPU phase can put it beside the balancer:
//   BENCH_CPU_ONLY=1 BENCH_CPU_BASELINE=bench/repro/thin-dispatcher.mjs npm run bench -- dispatch
// `vs baseline` is then the balancer's client CPU per request over this floor's, and `baseline CPU
// µs/req` against `pool CPU µs/req` says what the wrapping itself costs (in BENCHMARKS.md's runs
// 0.993–1.005 of the Pool: nothing measurable).
import { URL } from 'node:url';
import { Dispatcher, Pool } from 'undici';
import { APISERVER_NAME } from '../../fixtures/certs/index.ts';

class Forward {
  constructor(downstream) {
    this.downstream = downstream;
  }
  onRequestStart(controller, context) {
    this.downstream.onRequestStart?.(controller, context);
  }
  onResponseStart(controller, statusCode, headers, statusMessage) {
    this.downstream.onResponseStart?.(controller, statusCode, headers, statusMessage);
  }
  onResponseData(controller, chunk) {
    this.downstream.onResponseData?.(controller, chunk);
  }
  onResponseEnd(controller, trailers) {
    this.downstream.onResponseEnd?.(controller, trailers);
  }
  onResponseError(controller, error) {
    this.downstream.onResponseError?.(controller, error);
  }
}

class ThinDispatcher extends Dispatcher {
  constructor({ origin, target, tls }) {
    super();
    this.headers = Object.freeze({ host: new URL(origin).host });
    this.pool = new Pool(`https://${target.replace('static:///', '')}`, { connect: { ca: tls.ca, servername: APISERVER_NAME }, allowH2: true });
  }
  dispatch(opts, handler) {
    return this.pool.dispatch({ ...opts, headers: opts.headers ?? this.headers }, new Forward(handler));
  }
  close() {
    return this.pool.close();
  }
}

export function createBalancer(options) {
  return new ThinDispatcher(options);
}
