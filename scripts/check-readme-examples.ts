// Type-checks every ```ts block of README.md against the public API, so the examples cannot rot
// (`npm run check:readme`, part of `npm test`). Each block becomes a module of its own under
// .cache/readme-examples/, where `kube-balancer` and `kube-balancer/prometheus` map to src/ (tsconfig
// `paths`) and relative imports are relative to the README, i.e. the repository root. A block that is
// meant to be partial carries `<!-- not-checked: reason -->` on the line before its opening fence.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';

const root = join(import.meta.dirname, '..');
const readmePath = join(root, 'README.md');
const outDir = join(root, '.cache', 'readme-examples');

interface Example {
  /** 1-based README line of the block's first line of code. */
  line: number;
  code: string;
}

/** The ```ts blocks of a Markdown text, less those marked `<!-- not-checked: … -->`. */
function extractExamples(markdown: string): { examples: Example[]; skipped: number[] } {
  const lines = markdown.split('\n');
  const examples: Example[] = [];
  const skipped: number[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^```(ts|typescript)\s*$/.test(lines[i]!)) continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && !/^```\s*$/.test(lines[end]!)) end++;
    if (/^<!--\s*not-checked:.+-->\s*$/.test(lines[i - 1] ?? '')) skipped.push(start + 1);
    else examples.push({ line: start + 1, code: lines.slice(start, end).join('\n') });
    i = end;
  }
  return { examples, skipped };
}

/** `./fixtures/…` in the README means the repository's fixtures/: rewrite it for a module in `dir`. */
function rebaseRelativeImports(code: string, dir: string): string {
  return code.replace(/(from\s+|import\s*\(\s*)(['"])(\.\.?\/[^'"]+)\2/g, (_all, prefix: string, quote: string, specifier: string) => {
    let rebased = relative(dir, join(root, specifier)).split('\\').join('/');
    if (!rebased.startsWith('.')) rebased = `./${rebased}`;
    return `${prefix}${quote}${rebased}${quote}`;
  });
}

function check(): number {
  const { examples, skipped } = extractExamples(readFileSync(readmePath, 'utf8'));
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  // ESM, so that top-level await type-checks as it runs.
  writeFileSync(join(outDir, 'package.json'), '{ "type": "module" }\n');
  const files = new Map<string, Example>();
  for (const example of examples) {
    const file = join(outDir, `readme-line-${example.line}.ts`);
    // `export {}` makes a block without imports a module too.
    writeFileSync(file, `${rebaseRelativeImports(example.code, dirname(file))}\nexport {};\n`);
    files.set(file, example);
  }

  const base = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
  if (base === undefined) throw new Error('tsconfig.json cannot be read');
  const options: ts.CompilerOptions = {
    ...base.options,
    noEmit: true,
    paths: { 'kube-balancer': [join(root, 'src/index.ts')], 'kube-balancer/prometheus': [join(root, 'src/prometheus/index.ts')] },
  };
  const program = ts.createProgram([...files.keys()], options);
  const diagnostics = ts.getPreEmitDiagnostics(program);

  for (const diagnostic of diagnostics) {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    const example = diagnostic.file === undefined ? undefined : files.get(diagnostic.file.fileName);
    if (diagnostic.file !== undefined && diagnostic.start !== undefined && example !== undefined) {
      const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
      console.error(`README.md:${example.line + line}:${character + 1}: TS${diagnostic.code}: ${message}`);
    } else {
      const where = diagnostic.file === undefined ? '' : `${relative(root, diagnostic.file.fileName)}: `;
      console.error(`${where}TS${diagnostic.code}: ${message}`);
    }
  }
  const skippedNote = skipped.length === 0 ? '' : ` (${skipped.length} marked not-checked: README.md lines ${skipped.join(', ')})`;
  if (diagnostics.length > 0) {
    console.error(`✘ README examples: ${diagnostics.length} type error(s) in ${examples.length} ts block(s)${skippedNote}`);
    return 1;
  }
  console.log(`✔ README examples: ${examples.length} ts block(s) type-check against src/ (lines ${examples.map((e) => e.line).join(', ')})${skippedNote}`);
  return 0;
}

if (import.meta.filename === process.argv[1]) process.exitCode = check();
