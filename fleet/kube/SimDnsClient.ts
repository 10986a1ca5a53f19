import type { DnsAnswer, DnsClient } from '../../src/dns/DnsClient.ts';
import { DnsError } from '../../src/dns/DnsError.ts';
import type { QueryType } from '../../src/dns/wire.ts';
import type { DnsServer } from '../server/DnsServer.ts';
import type { Scheduler } from '../sim/Scheduler.ts';

/**
 * Stands in for the library's `DnsClient` (UDP sockets, resolv.conf) under the real `DnsCache`:
 * the one piece of the resolver path the simulation re-implements, and only its timing — each try
 * waits `timeout` ms, doubling every round, for `attempts` rounds over the one server (the
 * defaults: resolv.conf's 5 s capped at 2 s, 2 attempts), then fails with TIMEOUT as DnsClient does.
 * Every try reaches the DNS server's query count.
 */
export class SimDnsClient implements Pick<DnsClient, 'query'> {
  readonly #server: DnsServer;
  readonly #clock: Scheduler;
  readonly #timeout: number;
  readonly #attempts: number;

  constructor(server: DnsServer, clock: Scheduler, timeout = 2_000, attempts = 2) {
    this.#server = server;
    this.#clock = clock;
    this.#timeout = timeout;
    this.#attempts = attempts;
  }

  query(name: string, type: QueryType): Promise<DnsAnswer> {
    const clock = this.#clock;
    // The usual case first, with nothing but the answer's timer: one is asked every ~5 s per client.
    const answer = this.#server.query(name, type);
    if (answer !== undefined) return new Promise<DnsAnswer>((resolve) => this.#answerLater(answer, resolve));
    return new Promise<DnsAnswer>((resolve, reject) => {
      let round = 0;
      const wait = (): void => {
        clock.setTimeout(() => {
          round++;
          if (round < this.#attempts) {
            const later = this.#server.query(name, type);
            if (later !== undefined) return this.#answerLater(later, resolve);
            return wait();
          }
          clock.touch();
          reject(new DnsError('TIMEOUT', `${name} ${type}`, `no answer from the name server after ${round} tries`));
        }, this.#timeout * 2 ** round);
      };
      wait();
    });
  }

  #answerLater(answer: DnsAnswer, resolve: (answer: DnsAnswer) => void): void {
    const clock = this.#clock;
    clock.setTimeout(() => {
      clock.touch();
      resolve(answer);
    }, this.#server.config.latencyMs);
  }
}
