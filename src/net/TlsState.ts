import type { Pem, ResolvedTls, TlsOptions } from './tls.ts';

/**
 * Readings of a kubeconfig overlap (each request reads it, so do probes); one that began before a
 * rotation may end after one that began later. Within this many milliseconds of a switch, a reading
 * that brings back the material switched away from is taken for such a stale one.
 */
const STALE_READING_MS = 2_000;

/**
 * The TLS settings new connections use. A kubeconfig's credentials can change while a client runs
 * (an exec plugin hands out a new client certificate, a CA file is rewritten): `replace` switches to
 * them, and `generation` tells the pools that connections made before belong to the old ones.
 */
export class TlsState {
  #current: ResolvedTls;
  #previous: ResolvedTls | undefined;
  #switchedAt = -Infinity;
  #generation = 0;

  constructor(initial: ResolvedTls) {
    this.#current = initial;
  }

  get current(): ResolvedTls {
    return this.#current;
  }

  get generation(): number {
    return this.#generation;
  }

  /**
   * Whether `next`, not yet validated, holds the same material as now or is a stale reading of the
   * material in force before the last switch (`now` in milliseconds, monotonic). client-node hands
   * its settings over with every request: this is what lets them skip validation, which parses
   * every certificate and the key.
   */
  holds(next: TlsOptions, now: number): boolean {
    return sameTls(this.#current, next) || (this.#previous !== undefined && now - this.#switchedAt < STALE_READING_MS && sameTls(this.#previous, next));
  }

  /** Returns false, and changes nothing, when `next` is held already (see `holds`). */
  replace(next: ResolvedTls, now: number): boolean {
    if (this.holds(next, now)) return false;
    this.#previous = this.#current;
    this.#current = next;
    this.#switchedAt = now;
    this.#generation++;
    return true;
  }
}

function sameTls(a: ResolvedTls, b: TlsOptions): boolean {
  return (
    a.rejectUnauthorized === (b.rejectUnauthorized !== false) &&
    a.servername === b.servername &&
    samePem(a.cert, b.cert) &&
    samePem(a.key, b.key) &&
    samePemList(a.ca, b.ca)
  );
}

function samePemList(a: Pem | readonly Pem[] | undefined, b: Pem | readonly Pem[] | undefined): boolean {
  const listA: readonly Pem[] = a === undefined ? [] : Array.isArray(a) ? a : [a as Pem];
  const listB: readonly Pem[] = b === undefined ? [] : Array.isArray(b) ? b : [b as Pem];
  return listA.length === listB.length && listA.every((pem, i) => samePem(pem, listB[i]));
}

// Compared by content: client-node reads files and decodes base64 into fresh buffers every request.
function samePem(a: Pem | undefined, b: Pem | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  if (typeof a === 'string' && typeof b === 'string') return false;
  return (typeof a === 'string' ? Buffer.from(a) : a).equals(typeof b === 'string' ? Buffer.from(b) : b);
}
