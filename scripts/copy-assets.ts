// The demo ships with the package (kube-balancer demo) and needs the test PKI next to its code.
import { cpSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
cpSync(join(root, 'fixtures/certs'), join(root, 'dist/fixtures/certs'), {
  recursive: true,
  filter: (src) => !src.endsWith('.ts') && !src.endsWith('.sh'),
});
