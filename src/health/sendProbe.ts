import type { Dispatcher } from 'undici';
import type { Endpoint } from '../balancer/Endpoint.ts';
import { PatientTimer, type Clock } from '../clock.ts';
import { classifyError } from './classifyError.ts';
import type { ProbeResult } from './HealthTracker.ts';
import type { OutcomeJudge } from './OutcomeJudge.ts';
import type { ProbeSettings } from './Prober.ts';

/** undici reads `servername` per request, though its types do not list it. */
export type ProbeRequest = Dispatcher.DispatchOptions & { servername?: string };

/** What a probe is sent on: one endpoint's pool (any dispatcher with undici 8's `dispatch`). */
export interface ProbeDispatcher {
  dispatch(options: ProbeRequest, handler: Dispatcher.DispatchHandler): boolean;
}

/** Where one probe goes: the pool of the endpoint, for `origin` (its `Host`), with `sni` when the name is not an IP. */
export interface ProbeTarget {
  origin: URL;
  sni: string | undefined;
  pool: ProbeDispatcher;
}

/**
 * Sends one probe on one endpoint's pool and reads its answer as a verdict; `undefined` when it
 * proves nothing (no credentials this time, the endpoint or balancer gone meanwhile, a timeout our
 * own stall explains).
 */
export class ProbeSender {
  readonly #judge: Pick<OutcomeJudge, 'conclusiveTimeout' | 'silentConnect'>;
  readonly #clock: Clock;
  readonly #warn: (message: string) => void;
  readonly #closed: () => boolean;
  #warnedAuth = false;

  constructor(judge: Pick<OutcomeJudge, 'conclusiveTimeout' | 'silentConnect'>, clock: Clock, warn: (message: string) => void, closed: () => boolean) {
    this.#judge = judge;
    this.#clock = clock;
    this.#warn = warn;
    this.#closed = closed;
  }

  /**
   * `target` is looked up only once the headers are read: reading them (a kubeconfig's exec plugin)
   * may rotate the credentials, which closes the pools open before, and a probe sent on one of
   * those would fail as if the endpoint were unreachable (seen on a busy machine: all three ejected).
   */
  async send(endpoint: Endpoint, settings: ProbeSettings, target: () => ProbeTarget): Promise<ProbeResult | undefined> {
    let headers: Record<string, string>;
    try {
      headers = typeof settings.headers === 'function' ? await settings.headers() : settings.headers;
    } catch (error) {
      // No credentials this time (an exec plugin failed): no verdict on the endpoint either.
      this.#warn(`probe headers: ${(error as Error).message}`);
      return undefined;
    }
    if (endpoint.removed || this.#closed()) return undefined;
    const { origin, sni, pool } = target();
    const exchange = new ProbeExchange(this.#clock, settings.timeoutMs, endpoint);
    try {
      pool.dispatch(
        {
          path: settings.path,
          method: 'GET',
          headers: { ...headers, host: origin.host },
          // Off: the probe keeps its own time (see ProbeExchange), so no stream timeout of undici's fires for it.
          headersTimeout: 0,
          bodyTimeout: 0,
          ...(sni ? { servername: sni } : {}),
        },
        exchange,
      );
    } catch (error) {
      exchange.onResponseError(null, error as Error);
    }
    try {
      const statusCode = await exchange.answer;
      if (statusCode === 401 || statusCode === 403) {
        // The apiserver answers but will not say whether it is ready: count that as alive.
        if (!this.#warnedAuth) {
          this.#warnedAuth = true;
          this.#warn(`probe ${settings.path} answered ${statusCode}: set probe.headers (authorization) so readiness can be read`);
        }
        return 'pass';
      }
      return statusCode >= 200 && statusCode < 400 ? 'pass' : 'fail';
    } catch (error) {
      const kind = exchange.timedOut ? 'timeout' : classifyError(error);
      if ((kind === 'timeout' || kind === 'unresponsive') && !this.#judge.conclusiveTimeout(endpoint, settings.timeoutMs, settings.timeoutMs)) return undefined;
      const silentConnect = this.#judge.silentConnect(endpoint, kind, error as Error);
      if (silentConnect !== undefined) return silentConnect ? 'unreachable' : undefined;
      if (kind === 'connect' || kind === 'tls') return kind;
      // Connected but no answer in time (or no end of one by the deadline): a black hole, or not
      // talking. Inferred evidence: health caps what it may take out on it (see HealthTracker).
      return 'unreachable';
    }
  }
}

/**
 * The whole exchange, headers and body, ends within this many probe timeouts of being written,
 * like a kubelet probe's `timeoutSeconds`: a `/readyz` body that keeps coming (one byte a second)
 * never let a probe end, and the endpoint was never probed again.
 */
const DEADLINE_TIMEOUTS = 2;
/**
 * A probe reads at most this much body; the status already said everything (kubelet reads 10 KiB
 * of a probe's body). More ends the probe with the status it had.
 */
export const MAX_PROBE_BODY = 64 * 1024;

/**
 * Why a probe was aborted: no answer (or no piece of its body) for `probe.timeoutMs`, no end by
 * its deadline, or a body over `MAX_PROBE_BODY`.
 * Informational (undici's `UND_ERR_INFO`), like a superseded attempt's reason: undici's client
 * fails every request queued on it with an abort's reason when it counts none running (`onError`
 * in dispatcher/client.js), and no request is to fail for a probe. It counts none running while a
 * probe that a GOAWAY refused waits, queued again, for the new connection: the requests queued
 * behind it failed with this (seen in the demo's restarts: a create).
 */
class ProbeAbortError extends Error {
  override readonly name = 'ProbeAbortError';
  readonly code = 'UND_ERR_INFO';
}

/**
 * One probe's exchange with its pool, and the probe's own deadline: `timeoutMs` from the moment
 * the request is written to a connection until its headers, and then between two pieces of its
 * body (what undici's `headersTimeout` and `bodyTimeout` measured), and `DEADLINE_TIMEOUTS` ×
 * `timeoutMs` for all of it. Whatever it hears moves the endpoint's progress clock.
 *
 * Why not undici's timeouts: when one of them fires on an HTTP/2 stream, undici 8 PINGs the whole
 * session and resets it unless the ack comes within max(timeout, 1 s) (`probeHttp2Session` in
 * client-h2.js). When this process stalls for longer than that right after (a busy CPU), the
 * PING's timer runs before the ack, already in the socket buffer, is read: a healthy apiserver's
 * connection was reset and the POSTs in flight on it were lost (`failover` tests under load 10–15).
 * An abort of our own resets only the probe's stream (over HTTP/1.1 its connection, which carries
 * nothing else). Why not a timer started with `send`: it also counted setting up a fresh
 * connection, and on a loaded machine healthy endpoints were ejected while it did; that phase is
 * `connectTimeout`'s, whose `UND_ERR_CONNECT_TIMEOUT` still reaches the verdict below as before.
 * undici calls `onRequestStart` from `writeH1`/`writeH2`, once the connection is up. One gap:
 * undici does not tell a handler that a GOAWAY refused its stream and queued it again, so such a
 * probe's time goes on while it waits for the new connection (its timer restarts once it is sent
 * again); a timeout then is held against the endpoint only if it answered nothing meanwhile.
 */
class ProbeExchange implements Dispatcher.DispatchHandler {
  readonly answer: Promise<number>;
  /** Whether our deadline ended it (its error is ours, not undici's). */
  timedOut = false;
  readonly #clock: Clock;
  readonly #timeoutMs: number;
  readonly #endpoint: Endpoint;
  #resolve!: (statusCode: number) => void;
  #reject!: (error: Error) => void;
  #controller: Dispatcher.DispatchController | undefined;
  readonly #timer: PatientTimer;
  /** When the last sign of life came (clock ms). */
  #heardAt = 0;
  /** When it was written (clock ms): the whole exchange ends by `DEADLINE_TIMEOUTS` timeouts after. */
  #writtenAt = 0;
  #statusCode = 0;
  #bodyBytes = 0;

  constructor(clock: Clock, timeoutMs: number, endpoint: Endpoint) {
    this.#clock = clock;
    this.#timeoutMs = timeoutMs;
    this.#endpoint = endpoint;
    // Late by a quarter of the timeout or more, the deadline waits for what our own stall left
    // unread (a timeout so late would prove nothing anyway).
    this.#timer = new PatientTimer(clock, (now) => this.#onTimer(now), () => timeoutMs / 4);
    this.answer = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  /** Again, with a new controller, when undici sends it anew (refused by a GOAWAY, on a new connection): its time starts afresh. */
  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    this.#heardAt = this.#writtenAt = this.#clock.now();
    this.#bodyBytes = 0;
    this.#timer.arm(this.#timeoutMs, this.#heardAt);
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number): void {
    this.#heardAt = this.#endpoint.lastAnswerAt = this.#clock.now();
    if (statusCode >= 200) this.#statusCode = statusCode;
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#heardAt = this.#endpoint.lastAnswerAt = this.#clock.now();
    if ((this.#bodyBytes += chunk.length) <= MAX_PROBE_BODY || this.#statusCode === 0) return;
    // Enough read: the status decides, the rest is dropped with the stream.
    this.#timer.clear();
    this.#resolve(this.#statusCode);
    this.#controller?.abort(new ProbeAbortError(`probe: body over ${MAX_PROBE_BODY} bytes`));
  }

  onResponseEnd(): void {
    this.#timer.clear();
    this.#resolve(this.#statusCode);
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    this.#timer.clear();
    this.#reject(error);
  }

  /** One timer a probe: what was heard meanwhile moves the deadline instead of re-arming at every piece. */
  #onTimer(now: number): void {
    const quiet = now - this.#heardAt;
    const left = this.#writtenAt + DEADLINE_TIMEOUTS * this.#timeoutMs - now;
    if (quiet < this.#timeoutMs && left > 0) return this.#timer.arm(Math.min(this.#timeoutMs - quiet, left), now);
    this.timedOut = true;
    const why = quiet >= this.#timeoutMs ? `no answer for ${this.#timeoutMs} ms` : `no end within ${DEADLINE_TIMEOUTS * this.#timeoutMs} ms`;
    this.#controller?.abort(new ProbeAbortError(`probe: ${why}`));
  }
}
