import type { Clock } from '../clock.ts';
import { endpointKey, type EndpointAddress } from '../resolver/Resolver.ts';
import { Endpoint } from './Endpoint.ts';
import type { Picker, PickRequest } from './Picker.ts';
import { RoundRobinPicker } from './RoundRobinPicker.ts';

export interface EndpointSetChange {
  added: Endpoint[];
  removed: Endpoint[];
}

/**
 * The endpoints the resolver currently lists, with their live state, and the picker over them.
 * Updates are applied as diffs: an endpoint listed before and after keeps its counters and pools.
 */
export class EndpointSet {
  readonly #clock: Clock;
  readonly #endpoints = new Map<string, Endpoint>();
  /** Random start so that many clients do not all begin on the same apiserver. */
  readonly #cursor = { next: Math.floor(Math.random() * 0x7fffffff) };
  #picker: Picker = new RoundRobinPicker([], this.#cursor);
  #known = false;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** True once the resolver has produced a first set. */
  get known(): boolean {
    return this.#known;
  }

  get size(): number {
    return this.#endpoints.size;
  }

  list(): Endpoint[] {
    return [...this.#endpoints.values()];
  }

  pick(request: PickRequest): Endpoint | undefined {
    const exclude = request.exclude;
    if (!exclude) return this.#picker.pick(request);
    // Retries are rare: skipping tried endpoints by picking again keeps the common path simple.
    for (let i = 0; i < this.#endpoints.size; i++) {
      const endpoint = this.#picker.pick(request);
      if (!endpoint || !exclude.has(endpoint)) return endpoint;
    }
    return undefined;
  }

  update(addresses: readonly EndpointAddress[]): EndpointSetChange {
    this.#known = true;
    const next = new Map<string, EndpointAddress>();
    for (const address of addresses) next.set(endpointKey(address), address);
    const added: Endpoint[] = [];
    const removed: Endpoint[] = [];
    for (const [key, endpoint] of this.#endpoints) {
      if (!next.has(key)) {
        endpoint.removed = true;
        this.#endpoints.delete(key);
        removed.push(endpoint);
      }
    }
    for (const [key, address] of next) {
      const existing = this.#endpoints.get(key);
      if (existing) {
        existing.weight = address.weight ?? 1;
        existing.priority = address.priority ?? 0;
      } else {
        const endpoint = new Endpoint(address, this.#clock.now());
        this.#endpoints.set(key, endpoint);
        added.push(endpoint);
      }
    }
    this.rebuild();
    return { added, removed };
  }

  /** Rebuilds the picker; call after any change of eligibility. */
  rebuild(): void {
    const eligible = [...this.#endpoints.values()].filter((e) => e.state === 'ready');
    this.#picker = new RoundRobinPicker(eligible, this.#cursor);
  }
}
