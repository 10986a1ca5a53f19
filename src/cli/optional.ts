/**
 * Loads a package the library itself does not depend on (`@kubernetes/client-node`, `ws`): users
 * who never run the demo or `probe` need not install it. A missing one is a one-line error that
 * says what to install.
 */
export async function optional<T>(load: () => Promise<T>, packages: readonly string[], forWhat: string): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const { code, message } = error as { code?: string; message?: string };
    const missing = packages.filter((p) => message?.includes(`'${p}'`));
    if (code === 'ERR_MODULE_NOT_FOUND' && missing.length > 0) {
      // The message says all there is to do; the loader's stack would only bury it.
      throw new Error(`${forWhat} needs ${listed(packages)}: npm install ${packages.join(' ')}`);
    }
    throw error;
  }
}

/** `a`, `a and b`, `a, b and c`. */
function listed(names: readonly string[]): string {
  return names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
}
