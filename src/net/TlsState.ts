import type { Pem, ResolvedTls, TlsOptions } from './tls.ts';

/**
 * The TLS settings new connections use. A kubeconfig's credentials can change while a client runs
 * (an exec plugin hands out a new client certificate, a CA file is rewritten): `replace` switches to
 * them, and `generation` tells the pools that connections made before belong to the old ones.
 *
 * Readings of a kubeconfig overlap (each request reads it, so do probes), and one that began before
 * a rotation may end after one that began later, however long it took (an exec plugin on a busy
 * machine). So each reading takes a number when it begins (`beginReading`), and a reading that began
 * before the one now in force is stale: it never switches back.
 */
export class TlsState {
  #current: ResolvedTls;
  /** The number of the reading now in force (0: the initial settings). */
  #inForce = 0;
  #readings = 0;
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

  /** Numbers a reading of the settings as it begins; later readings get higher numbers. */
  beginReading(): number {
    return ++this.#readings;
  }

  /**
   * Whether `next`, not yet validated, needs no switch: it holds the same material as now, or its
   * reading began before the one in force. client-node hands its settings over with every request:
   * this is what lets them skip validation, which parses every certificate and the key.
   */
  holds(next: TlsOptions, reading: number): boolean {
    return reading < this.#inForce || sameTls(this.#current, next);
  }

  /** Returns false, and changes nothing, when `next` is held already (see `holds`). */
  replace(next: ResolvedTls, reading: number): boolean {
    if (this.holds(next, reading)) return false;
    this.#current = next;
    this.#inForce = reading;
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
