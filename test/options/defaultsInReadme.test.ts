// `defaultOptions` is the one source of defaults; the README's options table must say the same.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { defaultOptions } from '../../src/index.ts';

const readme = readFileSync(join(import.meta.dirname, '../../README.md'), 'utf8');

/** The rows of the table under the `Options` heading (`##` or `###`): option names (a cell may name several) → default cell. */
function optionsTable(markdown: string): Map<string, string> {
  const lines = markdown.split('\n');
  const heading = lines.findIndex((line) => /^#{2,3} Options$/.test(line));
  if (heading < 0) throw new Error('README.md has no "## Options" section');
  const rows = new Map<string, string>();
  let i = heading + 1;
  while (i < lines.length && !lines[i]!.startsWith('|')) i++;
  for (i += 2; i < lines.length && lines[i]!.startsWith('|'); i++) {
    const [names, defaultCell] = lines[i]!.split('|').slice(1, 3).map((cell) => cell.trim());
    for (const [, name] of names!.matchAll(/`([^`]+)`/g)) rows.set(name!, defaultCell!);
  }
  return rows;
}

/** The value the default cell documents: its first code span, read as a JS literal. */
function documentedValue(cell: string): unknown {
  const code = /`([^`]+)`/.exec(cell)?.[1];
  if (code === undefined) return undefined;
  const json = code
    .replace(/'([^']*)'/g, (_all, text: string) => JSON.stringify(text))
    .replace(/([{,]\s*)([A-Za-z_$][\w$]*)\s*:/g, '$1"$2":');
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return code;
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Every leaf of `defaultOptions` as a dotted path (`probe.intervalMs`); `{}` is a leaf. */
function leaves(value: unknown, path: string[] = []): Array<[string[], unknown]> {
  if (isPlainObject(value) && Object.keys(value).length > 0) {
    return Object.entries(value).flatMap(([key, child]) => leaves(child, [...path, key]));
  }
  return [[path, value]];
}

const rows = optionsTable(readme);

test('the README options table documents every key of defaultOptions with the same default', (t) => {
  const checked: string[] = [];
  const missing: string[] = [];
  for (const [path, value] of leaves(defaultOptions)) {
    // A nested key has its own row (`dns.minTtl`), or sits in its parent's object default (`retryBudget`: `{ percent: 20, min: 3 }`).
    let found = false;
    for (let depth = path.length; depth > 0 && !found; depth--) {
      const name = path.slice(0, depth).join('.');
      const cell = rows.get(name);
      if (cell === undefined) continue;
      let documented = documentedValue(cell);
      for (const key of path.slice(depth)) documented = isPlainObject(documented) ? documented[key] : undefined;
      t.deepEqual(documented, value, `README options row \`${name}\` (${cell}) for ${path.join('.')}: default is ${JSON.stringify(value)}`);
      checked.push(`${path.join('.')} = ${JSON.stringify(value)} (row \`${name}\`)`);
      found = true;
    }
    if (!found) missing.push(path.join('.'));
  }
  t.deepEqual(missing, [], 'options with a default but no row in the README options table');
  t.log(`checked ${checked.length} defaults against README rows:\n${checked.join('\n')}`);
  t.true(checked.length >= 20);
});

test('an object default in the README lists exactly the keys of defaultOptions', (t) => {
  for (const [name, value] of Object.entries(defaultOptions)) {
    const cell = rows.get(name);
    if (cell === undefined || !isPlainObject(value)) continue;
    const documented = documentedValue(cell);
    if (isPlainObject(documented)) t.deepEqual(documented, value, `README options row \`${name}\``);
  }
});
