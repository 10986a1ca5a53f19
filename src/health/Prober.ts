import type { Endpoint } from '../balancer/Endpoint.ts';
import type { Clock, ClockTimer } from '../clock.ts';
import type { HeadersSource } from '../net/headers.ts';
import type { ProbeResult } from './HealthTracker.ts';

export interface ProbeSettings {
  /** Path requested on every endpoint; `/readyz` fails as soon as an apiserver starts shutting down. */
  path: string;
  intervalMs: number;
  timeoutMs: number;
  /** Extra headers, e.g. `authorization` where anonymous access to /readyz is off (or a function giving them). */
  headers: HeadersSource;
}

/** Sends one probe to one endpoint; `undefined` when it cannot yet (no origin known to probe for). */
export type SendProbe = (endpoint: Endpoint, settings: ProbeSettings) => Promise<ProbeResult | undefined>;

/**
 * A ready endpoint that sent anything within the last interval (its progress clock,
 * `Endpoint.lastAnswerAt`) skips its probe (passive health is fresh), but at most this many times in a row: `/readyz` is the one early sign
 * of a shutdown — it fails for the whole `--shutdown-delay-duration` while requests still succeed —
 * so even a busy endpoint's is read every few intervals (10 s at the default 2 s, the interval of
 * OpenShift's load-balancer health check).
 */
const MAX_SKIPS = 4;

/**
 * Fresh passive health also needs the endpoint to keep answering what it has in flight: with
 * requests outstanding and nothing heard for this part of the probe timeout, the endpoint may have
 * just turned into a black hole (connections open, nothing back), and only the probe would tell
 * before the requests' own timeouts. A busy healthy endpoint answers far more often than that.
 * Long-running requests (watches) do not count as outstanding: they are open for minutes by design
 * (their events move the progress clock when they come), so with them every endpoint of an
 * informer's client looked quiet and was never skipped (`npm run fleet`: a fifth fewer probes without them).
 */
const QUIET_PART_OF_TIMEOUT = 0.25;

/**
 * In panic, the endpoints that are out (draining, ejected, probing) are probed on a schedule of
 * their own this often (jittered ±20 %; the first at once), besides the regular one. 500 ms: an apiserver back from a
 * restart is then seen within about a quarter second on average, rather than an interval (2 s) and,
 * for a draining one, a second passing probe (another interval); and it is shorter than the first
 * ejection (1 s), so a refused one comes back before its timer. Not shorter: these probes go to a
 * starting apiserver from every client of a fleet in panic at once, four times the regular rate. In
 * panic that is cheap: the picker sends the callers' own requests to those endpoints anyway, and a
 * probe is the smallest request there is. Outside panic the regular interval alone runs.
 */
const PANIC_INTERVAL_MS = 500;

/** One endpoint's probing: the probes skipped in a row, whether one is under way, and whether it was removed. */
interface Slot {
  readonly endpoint: Endpoint;
  skipped: number;
  /** Clock time its last probe ended: its own answer moved the progress clock, and is no reason to skip the next. */
  probedAt: number;
  probing: boolean;
  removed: boolean;
}

/**
 * Active health: a balancer's endpoints are probed together on one jittered timer (so a fleet of
 * clients does not probe in step), one probe at a time per endpoint. Probes that would only repeat
 * what requests just showed are skipped (`MAX_SKIPS`): with thousands of clients, probes are most
 * of the requests an apiserver gets (`npm run fleet`). Ejected, draining, probing and idle
 * endpoints are always probed; in panic, those out are also probed on a short schedule of their own
 * (`PANIC_INTERVAL_MS`).
 *
 * One timer per balancer, not per endpoint: every tick was a timer of its own, and with three
 * endpoints those were half of all the timers a simulated client ran (`npm run fleet`); probing
 * the endpoints of one client at the same moment loads no apiserver more, each gets one probe.
 */
export class Prober {
  readonly #settings: ProbeSettings;
  readonly #clock: Clock;
  readonly #send: SendProbe;
  readonly #onResult: (endpoint: Endpoint, result: ProbeResult, sentAt: number) => void;
  /** In the order they were added: a tick walks an array (a map's iterator cost more, `npm run fleet`); sets are small. */
  #slots: Slot[] = [];
  readonly #random: () => number;
  readonly #tick = (): void => this.#due();
  readonly #panic: () => boolean;
  readonly #panicTick = (): void => this.#panicDue();
  #timer: ClockTimer | undefined;
  /** The panic schedule's timer: set only while in panic (`PANIC_INTERVAL_MS`). */
  #panicTimer: ClockTimer | undefined;
  #closed = false;

  /**
   * `onResult` gets each probe's result and the clock time it was sent; `panic`: whether the picker is
   * in panic mode (`EndpointSet.panic`), which turns on the out endpoints' own schedule.
   */
  constructor(
    settings: ProbeSettings,
    clock: Clock,
    send: SendProbe,
    onResult: (endpoint: Endpoint, result: ProbeResult, sentAt: number) => void,
    random = Math.random,
    panic: () => boolean = () => false,
  ) {
    this.#settings = settings;
    this.#clock = clock;
    this.#send = send;
    this.#onResult = onResult;
    this.#random = random;
    this.#panic = panic;
  }

  /** Starts probing an endpoint: at the next tick, the first of which comes within one interval, spread at random. */
  add(endpoint: Endpoint): void {
    if (this.#closed || this.#slotOf(endpoint)) return;
    this.#slots.push({ endpoint, skipped: 0, probedAt: -Infinity, probing: false, removed: false });
    if (this.#timer === undefined) this.#timer = this.#clock.setTimeout(this.#tick, this.#settings.intervalMs * this.#random());
  }

  remove(endpoint: Endpoint): void {
    const slot = this.#slotOf(endpoint);
    if (!slot) return;
    slot.removed = true;
    this.#slots = this.#slots.filter((s) => s !== slot);
    if (this.#slots.length === 0) this.#stop();
  }

  /**
   * Probes `endpoint` at once, out of turn (the stall watch suspects a black hole), with the same
   * request and timeout as a scheduled probe, unless one is under way there; the schedule is left
   * as it is. Returns whether a probe was sent.
   */
  probeNow(endpoint: Endpoint): boolean {
    const slot = this.#slotOf(endpoint);
    if (this.#closed || slot === undefined || slot.probing) return false;
    void this.#probe(slot);
    return true;
  }

  /**
   * An endpoint just went out (ejected, draining). If no endpoint is left ready, every ejected one is
   * probed now, out of turn, rather than at the next tick, up to an interval later: an apiserver
   * ejected when its connections were refused and restarted since is then seen back within a probe's
   * time (see `HealthTracker.probeResult`), while the one draining sends its shutdown rejections to
   * the callers. If the picker is in panic, the out endpoints' own schedule starts (`#watchPanic`).
   */
  wentOut(): void {
    const slots = this.#slots;
    if (this.#closed) return;
    if (!slots.some((s) => s.endpoint.state === 'ready')) for (const slot of slots) if (slot.endpoint.state === 'ejected') this.probeNow(slot.endpoint);
    this.#watchPanic();
  }

  /**
   * An endpoint went out, or a regular tick came: if the picker is in panic and the out endpoints'
   * own schedule does not run yet, it starts, with their first probes now (one probe per out
   * endpoint each time panic begins: an apiserver already back is seen within a probe's time, not
   * up to `PANIC_INTERVAL_MS` later; `kube-balancer demo` showed 0.5–0.8 s). It stops by itself at
   * its first tick out of panic.
   */
  #watchPanic(): void {
    if (this.#closed || this.#panicTimer !== undefined || this.#slots.length === 0) return;
    this.#panicDue();
  }

  close(): void {
    this.#closed = true;
    this.#stop();
    this.#slots = [];
  }

  #stop(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#panicTimer !== undefined) this.#clock.clearTimeout(this.#panicTimer);
    this.#panicTimer = undefined;
  }

  /** The panic schedule: while in panic, every endpoint that is out and has no probe under way is probed. */
  #panicDue(): void {
    this.#panicTimer = undefined;
    if (this.#closed || !this.#panic()) return;
    for (const slot of this.#slots) {
      if (!slot.probing && slot.endpoint.state !== 'ready') void this.#probe(slot);
    }
    this.#panicTimer = this.#clock.setTimeout(this.#panicTick, PANIC_INTERVAL_MS * (0.8 + 0.4 * this.#random()));
  }

  #due(): void {
    this.#timer = undefined;
    const now = this.#clock.now();
    const { intervalMs, timeoutMs } = this.#settings;
    const slots = this.#slots;
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i]!;
      if (slot.probing) continue;
      const endpoint = slot.endpoint;
      const sinceAnswer = now - endpoint.lastAnswerAt;
      // An endpoint back for less than an interval is probed however fresh: a probation request
      // proves it answers, not that /readyz passes (a restarted apiserver serves before it is ready).
      const fresh =
        endpoint.state === 'ready' &&
        sinceAnswer < intervalMs &&
        endpoint.lastAnswerAt > slot.probedAt &&
        now - endpoint.readySince >= intervalMs &&
        (endpoint.inFlight === endpoint.streams || sinceAnswer < QUIET_PART_OF_TIMEOUT * timeoutMs);
      if (fresh && slot.skipped < MAX_SKIPS) {
        slot.skipped++;
        continue;
      }
      slot.skipped = 0;
      void this.#probe(slot);
    }
    if (this.#slots.length > 0) this.#timer = this.#clock.setTimeout(this.#tick, intervalMs * (0.8 + 0.4 * this.#random()));
    this.#watchPanic();
  }

  /** One probe of `slot`, marked under way from its start (synchronously, before the send). */
  async #probe(slot: Slot): Promise<void> {
    slot.probing = true;
    const endpoint = slot.endpoint;
    const sentAt = this.#clock.now();
    let result: ProbeResult | undefined;
    try {
      result = await this.#send(endpoint, this.#settings);
    } catch {
      result = 'fail';
    }
    slot.probing = false;
    slot.probedAt = this.#clock.now();
    // The endpoint may have been removed, or the balancer closed, while the probe ran.
    if (this.#closed || slot.removed) return;
    if (result !== undefined) this.#onResult(endpoint, result, sentAt);
  }

  #slotOf(endpoint: Endpoint): Slot | undefined {
    return this.#slots.find((slot) => slot.endpoint === endpoint);
  }
}
