// Domain names as we accept them from users and from the wire, and the resolv.conf search rules.

/** Why `name` cannot be queried, or `undefined` when it can (RFC 1035 §2.3.4 limits, ASCII only). */
export function nameProblem(name: string): string | undefined {
  const bare = stripDot(name);
  if (bare === '' || name.startsWith('.')) return 'is empty or starts with a dot';
  // 253 characters without the final dot is the 255-octet wire limit (length bytes + root label).
  if (bare.length > 253) return `is ${bare.length} characters long (at most 253)`;
  for (const label of bare.split('.')) {
    if (label.length === 0) return 'has an empty label (two dots in a row)';
    if (label.length > 63) return `has a label of ${label.length} characters (at most 63)`;
    // Letters, digits, hyphen, and underscore for SRV's _service._proto labels; IDNs go in as punycode.
    if (!/^[A-Za-z0-9_-]+$/.test(label)) return `has a label "${label}" with characters other than letters, digits, "-" and "_"`;
  }
  return undefined;
}

/** A trailing dot makes a name absolute: the search list never applies to it. */
function isAbsolute(name: string): boolean {
  return name.endsWith('.');
}

function stripDot(name: string): string {
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

/** DNS names compare case-insensitively (RFC 4343); this is the form used as a key. */
export function canonical(name: string): string {
  return stripDot(name).toLowerCase();
}

export function sameName(a: string, b: string): boolean {
  return canonical(a) === canonical(b);
}

/**
 * The names to try for `name`, in order, as glibc's res_search does: an absolute name alone; a name
 * with at least `ndots` dots as it is first, then with each search domain; a shorter one with each
 * search domain first, then as it is.
 */
export function searchCandidates(name: string, search: readonly string[], ndots: number): string[] {
  if (isAbsolute(name)) return [stripDot(name)];
  const dots = name.split('.').length - 1;
  // The root in the list (`.`) is the name as it is, at that place (glibc's root_on_list).
  const expanded = search.map((domain) => (stripDot(domain) === '' ? name : `${name}.${stripDot(domain)}`)).filter((n) => nameProblem(n) === undefined);
  const unique = (list: string[]): string[] => [...new Map(list.map((n) => [canonical(n), n])).values()];
  return unique(dots >= ndots ? [name, ...expanded] : [...expanded, name]);
}
