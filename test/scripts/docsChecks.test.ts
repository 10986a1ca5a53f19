// The documentation checks of `npm test` (issue 28, item 2): the link checker fails on a broken
// relative link or anchor, and the example checker skips and lists blocks marked pending-merge.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { checkLinks, slug } from '../../scripts/check-links.ts';
import { extractExamples } from '../../scripts/check-readme-examples.ts';

const exec = promisify(execFile);
const script = join(import.meta.dirname, '..', '..', 'scripts', 'check-links.ts');

/** A repository root with a README and one guide; `readme` is the README's text. */
async function repo(t: { teardown(fn: () => Promise<void>): void }, readme: string): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'kb-links-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  await mkdir(join(root, 'docs'));
  await writeFile(join(root, 'docs', 'guide.md'), '# The guide\n\n## Use with @kubernetes/client-node\n\nBack to the [README](../README.md#install).\n');
  await writeFile(join(root, 'README.md'), `# Project\n\n## Install\n\n${readme}\n`);
  return root;
}

test('a README whose links and anchors resolve passes, through the command', async (t) => {
  const root = await repo(t, 'See [the guide](docs/guide.md#use-with-kubernetesclient-node) and [install](#install).');
  t.deepEqual(checkLinks(root), []);
  const { stdout } = await exec(process.execPath, [script, root]);
  t.regex(stdout, /every relative link and anchor resolves in 2 Markdown file/);
});

test('a link to a missing file fails the command, naming file, line and link', async (t) => {
  const root = await repo(t, 'See [the old guide](docs/old.md).');
  const error = await t.throwsAsync(exec(process.execPath, [script, root]));
  t.is((error as { code?: number }).code, 1);
  t.regex((error as { stderr?: string }).stderr ?? '', /README\.md:5: docs\/old\.md: docs\/old\.md does not exist/);
});

test('an anchor no heading gives is broken, in the same file and in another', (t) => {
  return repo(t, '[a](#instal) [b](docs/guide.md#use-with-client-node) `[code](#not-a-link)`').then((root) => {
    t.deepEqual(
      checkLinks(root).map((b) => `${b.file}:${b.line} ${b.link}`),
      ['README.md:5 #instal', 'README.md:5 docs/guide.md#use-with-client-node'],
    );
  });
});

test('links inside code blocks are examples, not links', async (t) => {
  const root = await repo(t, '```md\n[x](missing.md)\n```');
  t.deepEqual(checkLinks(root), []);
});

test('GitHub slugs: code spans, punctuation and case', (t) => {
  t.is(slug('`kube-balancer demo` (`npm run demo`)'), 'kube-balancer-demo-npm-run-demo');
  t.is(slug('Other languages: `kube-balancer proxy`'), 'other-languages-kube-balancer-proxy');
  t.is(slug('Use with @kubernetes/client-node'), 'use-with-kubernetesclient-node');
});

test('the example checker takes ts and CommonJS js blocks, and lists pending-merge ones', (t) => {
  const markdown = [
    '```ts', 'const a: number = 1;', '```',
    '```js', "const { createBalancer } = require('kube-balancer');", '```',
    '```js', '{ endpoints: [] }', '```',
    '<!-- not-checked: pending-merge -->', '```ts', "import { x } from 'kube-balancer/testing';", '```',
    '<!-- not-checked: partial on purpose -->', '```ts', 'foo(', '```',
    '<!-- not-run: needs a cluster -->', '```js', "require('kube-balancer');", '```',
  ].join('\n');
  const found = extractExamples(markdown, 'docs/x.md');
  t.deepEqual(found.examples.map((e) => [e.line, e.kind, e.run]), [[2, 'ts', false], [5, 'cjs', true], [20, 'cjs', false]]);
  t.deepEqual(found.skipped, [12, 16]);
  t.deepEqual(found.pending, [12]);
});
