import type { Dispatcher } from 'undici';
import type { BodyTimer, Reader } from './BodyTimer.ts';

type Controller = Dispatcher.DispatchController;

/**
 * The one controller the caller's handler sees for the whole request. Each attempt on an endpoint
 * has its own connection controller; this forwards to the current one, remembers a pause across
 * attempts, and reports an abort that arrives between attempts. The request is its own controller
 * (`BalancedRequest` extends this): one object per request fewer, and no hop per call.
 */
export abstract class ProxyController implements Controller, Reader {
  /** The current attempt's body timer, if one runs: resuming starts its wait afresh. */
  bodyTimer: BodyTimer | undefined;
  #target: Controller | undefined;
  #paused = false;
  #aborted = false;
  #reason: Error | null = null;

  /** The caller aborted while no attempt was running (a retry about to be sent). */
  abstract abortedBetweenAttempts(reason: Error): void;

  set target(target: Controller) {
    this.#target = target;
    if (this.#aborted) target.abort(this.#reason ?? new Error('aborted'));
    else if (this.#paused) target.pause();
  }

  /** The attempt is over: an abort from now on must be reported by the request, not the connection. */
  detach(): void {
    this.#target = undefined;
  }

  /** Whether the caller aborted. An attempt's own connection dying is not the caller's abort. */
  get aborted(): boolean {
    return this.#aborted;
  }

  get paused(): boolean {
    return this.#paused;
  }

  get reason(): Error | null {
    return this.#reason ?? this.#target?.reason ?? null;
  }

  get rawHeaders(): Controller['rawHeaders'] {
    return this.#target?.rawHeaders ?? null;
  }

  get rawTrailers(): Controller['rawTrailers'] {
    return this.#target?.rawTrailers ?? null;
  }

  abort(reason: Error): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    if (this.#target) this.#target.abort(reason);
    else this.abortedBetweenAttempts(reason);
  }

  pause(): void {
    this.#paused = true;
    this.#target?.pause();
  }

  resume(): void {
    this.#paused = false;
    this.bodyTimer?.touch();
    this.#target?.resume();
  }
}
