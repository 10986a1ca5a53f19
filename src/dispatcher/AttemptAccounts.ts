import { OUTCOME_ABORTED, OUTCOME_ERROR, type Endpoint } from '../balancer/Endpoint.ts';
import type { EndpointSet } from '../balancer/EndpointSet.ts';
import type { Clock } from '../clock.ts';
import { measuresServing, type AttemptOutcome } from '../health/outcome.ts';
import type { OutcomeJudge } from '../health/OutcomeJudge.ts';
import type { StallWatch } from '../health/StallWatch.ts';

/**
 * What the endpoints learn from each attempt: their counts, the latency samples of timed requests
 * (and the stall watch's count of them), the health verdict. One piece for `Balancer` and the
 * fleet's simulated client (`fleet/kube/KubeClient.ts`), so that the simulation counts exactly as
 * the library does.
 */
export class AttemptAccounts {
  readonly #set: EndpointSet;
  readonly #judge: OutcomeJudge;
  readonly #stallWatch: StallWatch | undefined;
  readonly #clock: Clock;

  constructor(set: EndpointSet, judge: OutcomeJudge, stallWatch: StallWatch | undefined, clock: Clock) {
    this.#set = set;
    this.#judge = judge;
    this.#stallWatch = stallWatch;
    this.#clock = clock;
  }

  /**
   * An attempt went to `endpoint` at clock time `sentAt`; `timed`: a short request whose latency is
   * measured from it; `loadClass`: any other short request's class, whose latency is measured too.
   */
  started(endpoint: Endpoint, longRunning: boolean, timed: boolean, sentAt: number | undefined, loadClass?: string): void {
    endpoint.inFlight++;
    endpoint.requests++;
    if (longRunning) endpoint.streams++;
    if (sentAt === undefined) return;
    if (timed) {
      this.#set.timedStart(endpoint, sentAt);
      this.#stallWatch?.started(sentAt);
    } else if (loadClass !== undefined) this.#set.classStart(endpoint, sentAt);
  }

  /** `startedAt`: the `sentAt` of a timed attempt or of one with a `loadClass`, NaN otherwise. */
  ended(endpoint: Endpoint, longRunning: boolean, outcome: AttemptOutcome, startedAt: number, loadClass?: string): void {
    endpoint.inFlight--;
    if (longRunning) endpoint.streams--;
    endpoint.outcomes[outcomeIndex(outcome)]!++;
    // One clock read for the verdict and the latency sample: they describe the same moment.
    const now = this.#clock.now();
    this.#judge.judge(endpoint, outcome, now, startedAt);
    if (longRunning) return;
    this.#set.shortEnded(endpoint, startedAt, !measuresServing(outcome), now, loadClass);
    if (startedAt === startedAt && loadClass === undefined) this.#stallWatch?.ended(now);
  }
}

/** Where an attempt's outcome is counted in `Endpoint.outcomes`. */
function outcomeIndex(outcome: AttemptOutcome): number {
  if (outcome.type === 'response') return Math.min(5, Math.trunc(outcome.statusCode / 100));
  return outcome.type === 'error' ? OUTCOME_ERROR : OUTCOME_ABORTED;
}
