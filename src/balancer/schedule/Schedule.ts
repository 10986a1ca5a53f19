import type { Endpoint } from '../Endpoint.ts';

/**
 * A deterministic weighted order over a `Candidates` snapshot. It answers with indices into
 * `candidates.endpoints`; the picker turns them into endpoints.
 */
export interface Schedule {
  /** The next candidate in the weighted order. The hot path: no allocation. */
  next(): number;
  /** Like `next`, skipping excluded endpoints (a retry); −1 when every candidate is excluded. */
  nextExcept(exclude: ReadonlySet<Endpoint>): number;
}
