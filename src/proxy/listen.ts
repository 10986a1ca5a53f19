import { chmod, lstat, mkdir, stat, unlink } from 'node:fs/promises';
import type { Server } from 'node:http';
import { isIP } from 'node:net';
import { dirname } from 'node:path';
import { BalancerError } from '../errors.ts';
import { unbracket } from '../net/hostnames.ts';

/** Where the proxy listens: a TCP address and port, or a unix socket path. */
export type ListenOn = { address: string; port: number; allowRemote: boolean } | { unixSocket: string };

/** True for 127.0.0.0/8, ::1, `localhost` and IPv4-mapped loopback. */
export function isLoopback(address: string): boolean {
  const bare = unbracket(address).toLowerCase();
  if (bare === 'localhost') return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  if (bare === '::1') return true;
  return bare.startsWith('::ffff:127.');
}

/**
 * Starts `server` listening. A TCP address off loopback needs `allowRemote` (anyone who reaches the
 * port acts with the kubeconfig's credentials). A unix socket is created mode 0600 inside a directory
 * only its owner may enter (0700, made if missing): the directory closes the moment between `listen`
 * and `chmod`. A stale socket file left by a previous run is removed; anything else at the path is an error.
 */
export async function listenOn(server: Server, on: ListenOn): Promise<void> {
  if ('unixSocket' in on) {
    const dir = dirname(on.unixSocket);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const mode = (await stat(dir)).mode & 0o777;
    if ((mode & 0o077) !== 0) {
      throw new BalancerError('ERR_INVALID_OPTION', `options.unixSocket: its directory ${dir} is mode 0${mode.toString(8)}; other users could reach the socket: use a directory of mode 0700`);
    }
    const existing = await lstat(on.unixSocket).catch(() => undefined);
    if (existing && !existing.isSocket()) throw new BalancerError('ERR_INVALID_OPTION', `options.unixSocket: ${on.unixSocket} exists and is not a socket`);
    if (existing) await unlink(on.unixSocket);
    await listening(server, () => server.listen(on.unixSocket));
    await chmod(on.unixSocket, 0o600);
    return;
  }
  if (!isLoopback(on.address) && !on.allowRemote) {
    throw new BalancerError(
      'ERR_INVALID_OPTION',
      `options.address ${on.address} is not a loopback address: anyone who reaches it acts with the kubeconfig's credentials; set allowRemote (--allow-remote) to mean it`,
    );
  }
  await listening(server, () => server.listen(on.port, unbracket(on.address)));
}

function listening(server: Server, listen: () => void): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.once('listening', () => {
      server.off('error', reject);
      resolve();
    });
    listen();
  });
}
