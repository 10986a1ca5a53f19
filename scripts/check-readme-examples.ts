// Type-checks the code of README.md and docs/*.md against the public API, so the examples cannot rot
// (`npm run check:readme`, part of `npm test`): every ```ts block, and every ```js block that uses
// `require(` (the CommonJS examples, checked as .cjs with checkJs, then run: they must finish
// without a cluster, unless marked `<!-- not-run: reason -->`). Each block becomes a module of its
// own under .cache/readme-examples/, where `kube-balancer`, `kube-balancer/prometheus` and `/testing` map to src/
// (tsconfig `paths`) and relative imports are relative to the Markdown file. A block that is meant to
// be partial carries `<!-- not-checked: reason -->` on the line before its opening fence; one that
// needs code not merged yet carries `<!-- not-checked: pending-merge -->`, and is listed on every run
// so that it is not forgotten.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';

const root = join(import.meta.dirname, '..');
const outDir = join(root, '.cache', 'readme-examples');

export interface Example {
  /** The Markdown file, relative to the repository root. */
  source: string;
  /** 1-based line of the block's first line of code. */
  line: number;
  code: string;
  /** `cjs`: a ```js block with `require(`, checked as CommonJS JavaScript. */
  kind: 'ts' | 'cjs';
  /** A CommonJS block is run too, unless `<!-- not-run: … -->` precedes it. */
  run: boolean;
}

export interface Extracted {
  examples: Example[];
  /** First code lines of blocks marked not-checked. */
  skipped: number[];
  /** First code lines of blocks marked `not-checked: pending-merge`. */
  pending: number[];
}

/** The checked blocks of a Markdown text, less those marked `<!-- not-checked: … -->`. */
export function extractExamples(markdown: string, source = 'README.md'): Extracted {
  const lines = markdown.split('\n');
  const out: Extracted = { examples: [], skipped: [], pending: [] };
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(ts|typescript|js|javascript)\s*$/.exec(lines[i]!);
    if (fence === null) continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && !/^```\s*$/.test(lines[end]!)) end++;
    const code = lines.slice(start, end).join('\n');
    i = end;
    const ts = fence[1] === 'ts' || fence[1] === 'typescript';
    if (!ts && !/\brequire\s*\(/.test(code)) continue; // an ESM fragment or a data shape, not a program
    const before = lines[start - 2] ?? '';
    const marker = /^<!--\s*not-checked:(.+)-->\s*$/.exec(before);
    if (marker !== null) {
      out.skipped.push(start + 1);
      if (marker[1]!.trim() === 'pending-merge') out.pending.push(start + 1);
    } else out.examples.push({ source, line: start + 1, code, kind: ts ? 'ts' : 'cjs', run: !ts && !/^<!--\s*not-run:.+-->\s*$/.test(before) });
  }
  return out;
}

/** The Markdown files whose examples are checked: README.md and docs/*.md. */
function markdownSources(): string[] {
  const docs = join(root, 'docs');
  const guides = existsSync(docs) ? readdirSync(docs).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`) : [];
  return ['README.md', ...guides];
}

/** A relative import in a Markdown file means relative to that file: rewrite it for a module in `dir`. */
function rebaseRelativeImports(code: string, markdownDir: string, dir: string): string {
  return code.replace(/(from\s+|import\s*\(\s*|require\s*\(\s*)(['"])(\.\.?\/[^'"]+)\2/g, (_all, prefix: string, quote: string, specifier: string) => {
    let rebased = relative(dir, join(markdownDir, specifier)).split('\\').join('/');
    if (!rebased.startsWith('.')) rebased = `./${rebased}`;
    return `${prefix}${quote}${rebased}${quote}`;
  });
}

function check(): number {
  const all: Extracted = { examples: [], skipped: [], pending: [] };
  const notes: string[] = [];
  for (const source of markdownSources()) {
    const found = extractExamples(readFileSync(join(root, source), 'utf8'), source);
    all.examples.push(...found.examples);
    if (found.skipped.length > 0) notes.push(`${source} lines ${found.skipped.join(', ')}`);
    for (const line of found.pending) console.warn(`pending merge: ${source}:${line} is not checked until the code it needs is merged`);
    all.pending.push(...found.pending);
    all.skipped.push(...found.skipped);
  }
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  // ESM, so that top-level await type-checks as it runs; CommonJS blocks are .cjs files.
  writeFileSync(join(outDir, 'package.json'), '{ "type": "module" }\n');
  const files = new Map<string, Example>();
  for (const example of all.examples) {
    const name = `${example.source.replace(/[/.]/g, '-')}-line-${example.line}`;
    const file = join(outDir, example.kind === 'ts' ? `${name}.ts` : `${name}.cjs`);
    const code = rebaseRelativeImports(example.code, dirname(join(root, example.source)), dirname(file));
    // `export {}` makes a block without imports a module too; a CommonJS file is one anyway.
    writeFileSync(file, example.kind === 'ts' ? `${code}\nexport {};\n` : `${code}\n`);
    files.set(file, example);
  }

  const base = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
  if (base === undefined) throw new Error('tsconfig.json cannot be read');
  const options: ts.CompilerOptions = {
    ...base.options,
    noEmit: true,
    allowJs: true,
    checkJs: true,
    paths: {
      'kube-balancer': [join(root, 'src/index.ts')],
      'kube-balancer/prometheus': [join(root, 'src/prometheus/index.ts')],
      'kube-balancer/testing': [join(root, 'src/testing/index.ts')],
    },
  };
  const program = ts.createProgram([...files.keys()], options);
  const diagnostics = ts.getPreEmitDiagnostics(program);

  for (const diagnostic of diagnostics) {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    const example = diagnostic.file === undefined ? undefined : files.get(diagnostic.file.fileName);
    if (diagnostic.file !== undefined && diagnostic.start !== undefined && example !== undefined) {
      const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
      console.error(`${example.source}:${example.line + line}:${character + 1}: TS${diagnostic.code}: ${message}`);
    } else {
      const where = diagnostic.file === undefined ? '' : `${relative(root, diagnostic.file.fileName)}: `;
      console.error(`${where}TS${diagnostic.code}: ${message}`);
    }
  }
  const skippedNote = all.skipped.length === 0 ? '' : ` (${all.skipped.length} marked not-checked: ${notes.join('; ')})`;
  const blocks = `${all.examples.length} block(s) of ${markdownSources().length} Markdown file(s)`;
  if (diagnostics.length > 0) {
    console.error(`✘ examples: ${diagnostics.length} type error(s) in ${blocks}${skippedNote}`);
    return 1;
  }
  const failed = runCommonJs([...files].filter(([, e]) => e.run));
  if (failed > 0) {
    console.error(`✘ examples: ${failed} CommonJS block(s) failed to run`);
    return 1;
  }
  const cjs = all.examples.filter((e) => e.kind === 'cjs').length;
  console.log(`✔ examples: ${blocks} type-check against src/, ${cjs} of them CommonJS, run too${skippedNote}`);
  return 0;
}

/**
 * Runs each CommonJS example with `kube-balancer` required from src/ (Node strips the types and
 * `require`s the ES module), so the README's CommonJS claim is proven, not only typed. Returns
 * how many failed.
 */
function runCommonJs(examples: Array<[string, Example]>): number {
  let failed = 0;
  for (const [file, example] of examples) {
    const code = readFileSync(file, 'utf8')
      .replace(/require\((['"])kube-balancer\/prometheus\1\)/g, `require(${JSON.stringify(join(root, 'src/prometheus/index.ts'))})`)
      .replace(/require\((['"])kube-balancer\/testing\1\)/g, `require(${JSON.stringify(join(root, 'src/testing/index.ts'))})`)
      .replace(/require\((['"])kube-balancer\1\)/g, `require(${JSON.stringify(join(root, 'src/index.ts'))})`);
    const runFile = file.replace(/\.cjs$/, '.run.cjs');
    writeFileSync(runFile, code);
    const result = spawnSync(process.execPath, [runFile], { encoding: 'utf8', timeout: 30_000 });
    if (result.status !== 0) {
      failed++;
      const why = result.error?.message ?? `exit ${result.status ?? result.signal}`;
      console.error(`${example.source}:${example.line}: the CommonJS example failed to run (${why}):\n${result.stderr}`);
    }
  }
  return failed;
}

if (import.meta.filename === process.argv[1]) process.exitCode = check();
