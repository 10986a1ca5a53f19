import { BalancerError } from '../errors.ts';

/**
 * Loads each of `packages` (optional peers of this package, e.g. `ws` and `jsrsasign` for the
 * simulator) and throws `ERR_MISSING_PACKAGE` naming every one that is not installed and the command
 * that installs them: the simulator imports them deep inside, where a missing one would surface as a
 * loader error about a file the user never heard of.
 */
export async function requirePackages(packages: readonly string[], forWhat: string, load: (name: string) => Promise<unknown> = (name) => import(name)): Promise<void> {
  const missing: string[] = [];
  for (const name of packages) {
    try {
      await load(name);
    } catch (error) {
      const { code, message } = error as { code?: string; message?: string };
      if ((code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && message?.includes(`'${name}'`)) missing.push(name);
      else throw error;
    }
  }
  if (missing.length > 0) {
    const names = missing.length === 1 ? missing[0]! : `${missing.slice(0, -1).join(', ')} and ${missing.at(-1)}`;
    throw new BalancerError(
      'ERR_MISSING_PACKAGE',
      `${forWhat} needs ${names}, not installed here (optional peer ${missing.length === 1 ? 'dependency' : 'dependencies'} of kube-balancer). Fix: npm install --save-dev ${missing.join(' ')}`,
    );
  }
}
