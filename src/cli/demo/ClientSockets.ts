import diagnostics_channel from 'node:diagnostics_channel';
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

const POLL_MS = 5;

/**
 * The client sockets this process opens (kube-balancer's, the L4 proxy's), as `net.client.socket`
 * announces them, so the demo can tell when the clients have seen a crashed apiserver's resets:
 * the simulated apiservers run in the same process, but the RST still takes the kernel's loopback
 * path, and on a loaded machine it can reach the client socket well after the crash returned.
 */
export class ClientSockets {
  /** Each connected socket not closed yet, with the `host:port` it connected to. */
  readonly #open = new Map<Socket, string>();
  readonly #onSocket = (message: unknown): void => {
    const socket = (message as { socket: Socket }).socket;
    // Where it goes is read once it connects, and kept: once a peer's RST has reached the kernel,
    // and until this process reads it, `remoteAddress` is undefined (getpeername fails), so a
    // socket the crash had just reset looked closed already and the workloads resumed onto it.
    socket.once('connect', () => this.#open.set(socket, `${socket.remoteAddress}:${socket.remotePort}`));
    socket.once('close', () => this.#open.delete(socket));
  };

  constructor() {
    diagnostics_channel.subscribe('net.client.socket', this.#onSocket);
  }

  /** Client sockets connected to `authority` (`host:port`) and not closed yet. */
  #openTo(authority: string): number {
    let n = 0;
    for (const [socket, to] of this.#open) if (!socket.destroyed && to === authority) n++;
    return n;
  }

  /** Resolves once no client socket to `authority` is open, or after `maxWaitMs`; true when none is. */
  async closedTo(authority: string, maxWaitMs: number): Promise<boolean> {
    const deadline = performance.now() + maxWaitMs;
    while (this.#openTo(authority) > 0) {
      if (performance.now() >= deadline) return false;
      await sleep(POLL_MS);
    }
    return true;
  }

  close(): void {
    diagnostics_channel.unsubscribe('net.client.socket', this.#onSocket);
    this.#open.clear();
  }
}
