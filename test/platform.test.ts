// The Node.js and undici check made at import (issue 28, item 4): what it accepts, and what it
// names when it refuses — what was found, what is needed, and the fix.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import test from 'ava';
import { BalancerError } from '../src/errors.ts';
import { checkPlatform, installedVersions } from '../src/platform.ts';

const refused = (node: string, undici: string | undefined): BalancerError => {
  try {
    checkPlatform({ node, undici });
  } catch (error) {
    if (error instanceof BalancerError) return error;
    throw error;
  }
  throw new Error(`node ${node} with undici ${undici} was accepted`);
};

test('supported versions pass: Node 22.19+, 23, 24 and undici 8.10 to 8.x', (t) => {
  for (const node of ['22.19.0', 'v22.23.3', '23.0.0', '24.1.0', '25.0.0-pre']) {
    for (const undici of ['8.10.0', '8.13.1', '8.99.0']) t.notThrows(() => checkPlatform({ node, undici }), `${node} ${undici}`);
  }
});

test('an older Node is named, with what is needed and the fix', (t) => {
  for (const node of ['20.19.5', '22.18.9', 'v22.0.0', '18.20.0']) {
    const error = refused(node, '8.13.1');
    t.is(error.code, 'ERR_PLATFORM');
    t.true(error.message.includes(`Node.js v${node.replace(/^v/, '')}`), error.message);
    t.regex(error.message, />= 22\.19\.0/);
    t.regex(error.message, /Fix: run it on Node\.js 22\.19 or newer/);
  }
});

test('an undici outside 8.10–8.x, or none, is named with the install command', (t) => {
  for (const undici of ['7.30.3', '8.9.0', '9.0.0', '6.21.0']) {
    const error = refused('22.23.3', undici);
    t.is(error.code, 'ERR_PLATFORM');
    t.true(error.message.includes(`undici ${undici} is installed`), error.message);
    t.regex(error.message, />=8\.10\.0 <9/);
    t.regex(error.message, /Fix: npm install undici@8/);
  }
  const none = refused('22.23.3', undefined);
  t.regex(none.message, /none is installed\. Fix: npm install undici@8/);
});

test('the real check passes here, and the real versions are read', (t) => {
  const found = installedVersions();
  t.is(found.node, process.versions.node);
  t.regex(found.undici ?? '', /^8\.\d+\.\d+/);
  t.notThrows(() => checkPlatform(found));
});

test('importing the package on an unsupported Node fails at import with ERR_PLATFORM', (t) => {
  // The real import path: a child whose process.versions.node is made to look like Node 20.
  const index = join(import.meta.dirname, '../src/index.ts');
  const script = `Object.defineProperty(process.versions, 'node', { value: '20.19.5' });
try { await import(${JSON.stringify(index)}); console.log('loaded'); } catch (e) { console.log(e.code + ' ' + e.message); }`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
  t.regex(child.stdout, /^ERR_PLATFORM kube-balancer needs Node\.js >= 22\.19\.0; this is Node\.js v20\.19\.5/, child.stderr);
});

test('the CLI on an unsupported Node says so in one line, exit 1, no stack', (t) => {
  const main = join(import.meta.dirname, '../src/cli/main.ts');
  const script = `Object.defineProperty(process.versions, 'node', { value: '20.19.5' }); process.argv.push('resolve', 'static:///127.0.0.1:6443'); await import(${JSON.stringify(main)});`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
  t.is(child.status, 1, child.stderr);
  t.is(child.stderr.trim().split('\n').length, 1, child.stderr);
  t.regex(child.stderr, /^kube-balancer: kube-balancer needs Node\.js >= 22\.19\.0; this is Node\.js v20\.19\.5/);
});
