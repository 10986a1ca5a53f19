import type { Endpoint } from '../balancer/Endpoint.ts';

/** An attempt, by the endpoint it was handed to. */
export interface WaitingAttempt {
  readonly endpoint: Endpoint;
}

/** The request an attempt belongs to, which may send it elsewhere. */
export interface AttemptMover {
  /**
   * Moves `attempt` to another endpoint if the request may and one takes it; false when it stays.
   * `sent`: also when it was written already (and has heard nothing).
   */
  moveWaiting(attempt: WaitingAttempt, sent: boolean): boolean;
}

/**
 * The attempts of idempotent requests handed to an endpoint's pool that have no response yet. When
 * health takes the endpoint out, those not yet written to a connection (queued for one, or for a
 * free stream) go elsewhere now; when the verdict is silence (nothing at all came from there for a
 * while), so do those written and unanswered, which are not making progress either (their
 * streams alone are aborted). What is being answered finishes, as in a drain. A verdict about an
 * endpoint stops new picks and never destroys a connection: only a connection's own liveness (its
 * PINGs, its socket) does that.
 */
export class WaitingAttempts {
  readonly #byEndpoint = new Map<Endpoint, Map<WaitingAttempt, AttemptMover>>();

  add(attempt: WaitingAttempt, mover: AttemptMover): void {
    let waiting = this.#byEndpoint.get(attempt.endpoint);
    if (!waiting) this.#byEndpoint.set(attempt.endpoint, (waiting = new Map<WaitingAttempt, AttemptMover>()));
    waiting.set(attempt, mover);
  }

  /** Its response began, or it ended. */
  delete(attempt: WaitingAttempt): void {
    this.#byEndpoint.get(attempt.endpoint)?.delete(attempt);
  }

  /**
   * The endpoint was taken out: every attempt still waiting there is offered a move (`sent`: those
   * already written too). Returns how many moved.
   */
  moveAll(endpoint: Endpoint, sent: boolean): number {
    const waiting = this.#byEndpoint.get(endpoint);
    if (!waiting || waiting.size === 0) return 0;
    let moved = 0;
    // A copy: a move ends the attempt (which leaves the map) and may add its successor to another endpoint's.
    for (const [attempt, mover] of [...waiting]) if (mover.moveWaiting(attempt, sent)) moved++;
    return moved;
  }

  /** The endpoint left the set. */
  forget(endpoint: Endpoint): void {
    this.#byEndpoint.delete(endpoint);
  }
}
