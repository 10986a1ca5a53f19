// Checked at import (the first import of src/index.ts and src/cli/main.ts): on an older Node or
// with undici 7 the package loads without a word and the first request dies deep inside undici
// (issue 28, item 2), so the mismatch is named here instead, with its fix.
import { createRequire } from 'node:module';
import { BalancerError } from './errors.ts';

/** The oldest Node.js this package runs on (package.json `engines`). */
const NODE_MIN = [22, 19, 0] as const;
/** undici's supported range, as in package.json `peerDependencies`: >=8.10.0 <9. */
const UNDICI_MIN = [8, 10, 0] as const;
const UNDICI_MAJOR = 8;

/** The versions the check looks at; `undici` is undefined when it is not installed. */
export interface PlatformVersions {
  node: string;
  undici: string | undefined;
}

function parts(version: string): [number, number, number] {
  const [major = NaN, minor = 0, patch = 0] = version.replace(/^v/, '').split(/[.+-]/).map(Number);
  return [major, minor, patch];
}

function atLeast(version: string, min: readonly [number, number, number]): boolean {
  const v = parts(version);
  for (let i = 0; i < 3; i++) if (v[i] !== min[i]) return v[i]! > min[i]!;
  return true;
}

/**
 * Throws `BalancerError` `ERR_PLATFORM` when `found` is outside what the package supports (Node ≥
 * 22.19, undici >=8.10.0 <9), naming what was found, what is needed and the fix.
 */
export function checkPlatform(found: PlatformVersions): void {
  if (!atLeast(found.node, NODE_MIN)) {
    throw new BalancerError(
      'ERR_PLATFORM',
      `kube-balancer needs Node.js >= 22.19.0; this is Node.js ${found.node.replace(/^v?/, 'v')}. Fix: run it on Node.js 22.19 or newer (undici 8 does not load on older ones).`,
    );
  }
  if (found.undici === undefined) {
    throw new BalancerError('ERR_PLATFORM', 'kube-balancer needs undici >=8.10.0 <9, and none is installed. Fix: npm install undici@8');
  }
  if (parts(found.undici)[0] !== UNDICI_MAJOR || !atLeast(found.undici, UNDICI_MIN)) {
    throw new BalancerError(
      'ERR_PLATFORM',
      `kube-balancer needs undici >=8.10.0 <9; undici ${found.undici} is installed. Fix: npm install undici@8 (the balancer is an undici 8 Dispatcher; with undici 7 responses lose headers or requests throw).`,
    );
  }
}

/** The running Node.js and the undici this package resolves (the one its own `import 'undici'` loads). */
export function installedVersions(): PlatformVersions {
  let undici: string | undefined;
  try {
    // undici has no `exports` map, so its package.json resolves like any file of it.
    undici = (createRequire(import.meta.url)('undici/package.json') as { version?: string }).version;
  } catch {
    undici = undefined;
  }
  return { node: process.versions.node, undici };
}

checkPlatform(installedVersions());
