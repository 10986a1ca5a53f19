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
    // The usual case first: answered at once (within the millisecond, as the probes are), with no
    // timer — one query per client every ~5 s, and a timer for each was a tenth of a run's events.
    const answer = this.#server.query(name, type);
    if (answer !== undefined) {
      clock.touch();
      return Promise.resolve(answer);
    }
    return new Promise<DnsAnswer>((resolve, reject) => {
      let round = 0;
      const wait = (): void => {
        clock.setTimeout(() => {
          round++;
          clock.touch();
          if (round < this.#attempts) {
            const later = this.#server.query(name, type);
            if (later !== undefined) return resolve(later);
            return wait();
          }
          reject(new DnsError('TIMEOUT', `${name} ${type}`, `no answer from the name server after ${round} tries`));
        }, this.#timeout * 2 ** round);
      };
      wait();
    });
  }
}
