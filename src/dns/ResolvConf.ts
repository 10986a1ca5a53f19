import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { hostname as systemHostname } from 'node:os';
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

/**
 * Reads the file and applies `LOCALDOMAIN` and `RES_OPTIONS`; a missing file means glibc's defaults.
 * `hostname` is gethostname(), whose domain is the search list when nothing else gives one.
 */
export async function readResolvConf(path = '/etc/resolv.conf', env: NodeJS.ProcessEnv = process.env, hostname = systemHostname()): Promise<ResolvConf> {
  let text = '';
  try {
    text = await readFile(path, 'utf8');
  } catch {
    // No file (containers, some CI images): glibc then uses its defaults too.
  }
  return parseResolvConf(text, env, hostname);
}

/**
 * The file as glibc 2.36 reads it (resolv/res_init.c, res_vinit_1 and res_setoptions):
 * - a keyword counts only at the start of a line and followed by a space or a tab;
 * - `domain` (its first word) and `search` (every word) replace the list, the last such line
 *   winning; a `domain` or `search` line with nothing after it is ignored, it clears nothing;
 * - `LOCALDOMAIN`, when set, replaces both (even when empty);
 * - with no list from any of these, the list is the host name's domain: what follows its first dot
 *   (none without a dot);
 * - `RES_OPTIONS` amends the options after the file.
 * Search domains are then checked as names: one that cannot be queried is skipped, as glibc's
 * query for it fails.
 */
export function parseResolvConf(text: string, env: { LOCALDOMAIN?: string | undefined; RES_OPTIONS?: string | undefined } = {}, hostname?: string): ResolvConf {
  const conf: ResolvConf = { ...resolvConfDefaults, nameservers: [], search: [] };
  let search: string[] | undefined;
  for (const raw of text.split('\n')) {
    const keyword = /^(nameserver|domain|search|options)[ \t]/.exec(raw)?.[1];
    if (keyword === undefined) continue;
    const args = raw.slice(keyword.length).trim().split(/\s+/).filter((word) => word !== '');
    switch (keyword) {
      case 'nameserver': {
        // No port syntax in the file: a server is always asked on 53.
        const address = args[0] ?? '';
        if (conf.nameservers.length < MAX_NAMESERVERS && ipFamily(address) !== 0) conf.nameservers.push({ address, port: 53 });
        break;
      }
      case 'domain':
        if (args.length > 0) search = args.slice(0, 1);
        break;
      case 'search':
        if (args.length > 0) search = args;
        break;
      default:
        applyOptions(conf, args);
        break;
    }
  }
  if (env.LOCALDOMAIN !== undefined) {
    // glibc keeps the first word even when empty (the root), so a set LOCALDOMAIN always gives a list.
    const [first, ...rest] = env.LOCALDOMAIN.split('\n')[0]!.split(/[ \t]+/);
    search = [first!, ...rest.filter((word) => word !== '')];
  }
  if (search === undefined && hostname !== undefined && hostname.includes('.')) search = [hostname.slice(hostname.indexOf('.') + 1)];
  conf.search = validDomains(search ?? []);
  if (env.RES_OPTIONS !== undefined) applyOptions(conf, env.RES_OPTIONS.trim().split(/\s+/));
  if (conf.nameservers.length === 0) conf.nameservers = resolvConfDefaults.nameservers.map((s) => ({ ...s }));
  return conf;
}

/**
 * glibc drops one leading dot of a search domain (`.example.com` is `example.com`), and the root
 * (`.` or empty) stays as `.`: the name as it is, tried at that place in the list.
 */
function validDomains(list: string[]): string[] {
  return list.map((d) => (d.startsWith('.') ? d.slice(1) : d) || '.').filter((d) => d === '.' || nameProblem(d) === undefined);
}

/**
 * glibc's options: `ndots:`, `timeout:` and `attempts:` take what C's atoi makes of the rest —
 * leading digits (an optional sign), 0 when there are none, so `ndots:abc` is 0 and `ndots:3x` is
 * 3 — capped at 15, 30 and 5; names match by prefix (`rotate…`); unknown options are ignored.
 * Below glibc: a negative ndots acts as 0 (every name has ≥ 0 dots), and timeout and attempts are
 * at least 1 (glibc would send nothing with attempts:0).
 */
function applyOptions(conf: ResolvConf, options: string[]): void {
  for (const option of options) {
    if (option.startsWith('ndots:')) conf.ndots = Math.max(0, Math.min(atoi(option.slice(6)), 15));
    else if (option.startsWith('timeout:')) conf.timeout = Math.min(Math.max(atoi(option.slice(8)), 1), 30);
    else if (option.startsWith('attempts:')) conf.attempts = Math.min(Math.max(atoi(option.slice(9)), 1), 5);
    else if (option.startsWith('rotate')) conf.rotate = true;
  }
}

/** C's atoi as glibc has it, (int) strtol(s, NULL, 10): saturating at the long range, then cut to 32 bits. */
function atoi(text: string): number {
  const m = /^[\t\n\v\f\r ]*([+-]?)(\d+)/.exec(text);
  if (!m) return 0;
  const LONG_MAX = (1n << 63n) - 1n;
  let value = BigInt(m[2]!);
  if (m[1] === '-') value = -value < -LONG_MAX - 1n ? -LONG_MAX - 1n : -value;
  else if (value > LONG_MAX) value = LONG_MAX;
  return Number(BigInt.asIntN(32, value));
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
