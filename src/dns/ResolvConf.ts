import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { nameProblem } from './names.ts';

export interface NameServer {
  /** IPv4 or IPv6 literal without brackets; IPv6 link-local may carry a `%zone`. */
  address: string;
  port: number;
}

/** What a stub resolver takes from `/etc/resolv.conf` (resolv.conf(5), glibc semantics). */
export interface ResolvConf {
  nameservers: NameServer[];
  search: string[];
  ndots: number;
  /** Seconds, as the file says (`options timeout:n`). */
  timeout: number;
  attempts: number;
  rotate: boolean;
}

/** glibc's MAXNS: further `nameserver` lines are ignored. */
const MAX_NAMESERVERS = 3;

const resolvConfDefaults: Readonly<ResolvConf> = Object.freeze({
  // glibc falls back to the local server when the file lists none.
  nameservers: [{ address: '127.0.0.1', port: 53 }],
  search: [],
  ndots: 1,
  timeout: 5,
  attempts: 2,
  rotate: false,
});

/** Reads the file and applies `LOCALDOMAIN` and `RES_OPTIONS`; a missing file means glibc's defaults. */
export async function readResolvConf(path = '/etc/resolv.conf', env: NodeJS.ProcessEnv = process.env): Promise<ResolvConf> {
  let text = '';
  try {
    text = await readFile(path, 'utf8');
  } catch {
    // No file (containers, some CI images): glibc then uses its defaults too.
  }
  return parseResolvConf(text, env);
}

export function parseResolvConf(text: string, env: { LOCALDOMAIN?: string; RES_OPTIONS?: string } = {}): ResolvConf {
  const conf: ResolvConf = { ...resolvConfDefaults, nameservers: [], search: [] };
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const [keyword, ...args] = line.split(/\s+/);
    switch (keyword) {
      case 'nameserver': {
        // No port syntax in the file: a server is always asked on 53.
        const address = args[0] ?? '';
        if (conf.nameservers.length < MAX_NAMESERVERS && ipFamily(address) !== 0) conf.nameservers.push({ address, port: 53 });
        break;
      }
      // The last `search` or `domain` line wins; `domain` is the one-entry form.
      case 'domain':
        conf.search = validDomains(args.slice(0, 1));
        break;
      case 'search':
        conf.search = validDomains(args);
        break;
      case 'options':
        applyOptions(conf, args);
        break;
      default:
        break;
    }
  }
  if (env.LOCALDOMAIN !== undefined) conf.search = validDomains(env.LOCALDOMAIN.trim().split(/\s+/));
  if (env.RES_OPTIONS !== undefined) applyOptions(conf, env.RES_OPTIONS.trim().split(/\s+/));
  if (conf.nameservers.length === 0) conf.nameservers = resolvConfDefaults.nameservers.map((s) => ({ ...s }));
  return conf;
}

function validDomains(list: string[]): string[] {
  return list.filter((d) => d !== '' && d !== '.' && nameProblem(d) === undefined);
}

/** glibc caps: ndots 15, timeout 30 s, attempts 5; unknown options are ignored as glibc does. */
function applyOptions(conf: ResolvConf, options: string[]): void {
  for (const option of options) {
    const [name, value] = option.split(':', 2);
    const n = value === undefined || !/^\d+$/.test(value) ? undefined : Number(value);
    if (name === 'rotate') conf.rotate = true;
    else if (n === undefined) continue;
    else if (name === 'ndots') conf.ndots = Math.min(n, 15);
    else if (name === 'timeout') conf.timeout = Math.min(Math.max(n, 1), 30);
    else if (name === 'attempts') conf.attempts = Math.min(Math.max(n, 1), 5);
  }
}

/**
 * A server as `options.dns.servers` lists it: `10.0.0.10`, `10.0.0.10:5353`, `::1`, `[::1]:5353`.
 * `undefined` if it is none of these.
 */
export function parseNameServer(spec: string): NameServer | undefined {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+))(?::(\d{1,5}))?$/.exec(spec);
  let address: string;
  let port = 53;
  if (m) {
    address = m[1] ?? m[2] ?? '';
    if (m[3] !== undefined) port = Number(m[3]);
    if (m[1] !== undefined && ipFamily(address) !== 6) return undefined;
    if (m[2] !== undefined && isIP(address) !== 4) return undefined;
  } else if (ipFamily(spec) === 6) {
    address = spec; // bare IPv6: the port cannot be written without brackets
  } else {
    return undefined;
  }
  if (port < 1 || port > 65535) return undefined;
  return { address, port };
}

/**
 * 4, 6 or 0 (not an IP address), like `isIP`, for an address that may carry a `%zone`: Node's
 * `isIP` refuses some interface names (`%veth_1`).
 */
export function ipFamily(address: string): number {
  return isIP(address.split('%')[0] ?? '');
}
