// Builds start from an empty dist/: `npm pack` takes whatever is there, and a file an earlier build
// (or layout) left behind must not be published.
import { rmSync } from 'node:fs';
import { join } from 'node:path';

rmSync(join(import.meta.dirname, '..', 'dist'), { recursive: true, force: true });
