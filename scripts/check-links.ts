// Checks that every relative link and #anchor of the project's Markdown resolves (`npm run
// check:links`, part of `npm test`): a moved guide or a renamed heading otherwise leaves readers at a
// 404 that no other check notices. External (http:, mailto:) links are not fetched.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

export interface BrokenLink {
  /** The Markdown file, relative to the root. */
  file: string;
  /** 1-based line of the link. */
  line: number;
  link: string;
  reason: string;
}

/** The Markdown files checked: README, CONTRIBUTING, CHANGELOG, SECURITY and docs/*.md (not docs/api, which typedoc writes). */
export function markdownFiles(root: string): string[] {
  const top = ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md', 'SECURITY.md'].filter((name) => existsSync(join(root, name)));
  const docs = join(root, 'docs');
  const guides = existsSync(docs) ? readdirSync(docs).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`) : [];
  return [...top, ...guides.sort()];
}

/** GitHub's heading anchor: lower case, punctuation but `-` and `_` dropped, spaces to `-`. */
export function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link in a heading keeps its text
    .replace(/<[^>]+>/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** Lines outside fenced code blocks, with inline code spans blanked out (links there are examples). */
function proseLines(markdown: string): string[] {
  let fence: string | undefined;
  return markdown.split('\n').map((line) => {
    const opening = /^\s*(```|~~~)/.exec(line);
    if (opening !== null) {
      if (fence === undefined) fence = opening[1];
      else if (line.trim().startsWith(fence)) fence = undefined;
      return '';
    }
    return fence === undefined ? line.replace(/`[^`]*`/g, (code) => ' '.repeat(code.length)) : '';
  });
}

/** Every anchor a Markdown file offers: its headings (duplicates numbered as GitHub does) and `id`/`name` attributes. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fence = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fence = !fence;
    if (fence) continue;
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading !== null) {
      const base = slug(heading[1]!);
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      anchors.add(count === 0 ? base : `${base}-${count}`);
    }
    for (const match of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(match[1]!);
  }
  return anchors;
}

/** The broken relative links and anchors of the given files (paths relative to `root`). */
export function checkLinks(root: string, files: readonly string[] = markdownFiles(root)): BrokenLink[] {
  const broken: BrokenLink[] = [];
  const anchorCache = new Map<string, Set<string>>();
  const anchorsIn = (path: string): Set<string> => {
    let anchors = anchorCache.get(path);
    if (anchors === undefined) anchorCache.set(path, (anchors = anchorsOf(readFileSync(path, 'utf8'))));
    return anchors;
  };
  for (const file of files) {
    const path = join(root, file);
    const lines = proseLines(readFileSync(path, 'utf8'));
    lines.forEach((line, index) => {
      // [text](target), ![alt](target), and [label]: target definitions.
      const targets = [
        ...[...line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!),
        ...[...line.matchAll(/^\s*\[[^\]]+\]:\s+(\S+)/g)].map((m) => m[1]!),
      ];
      for (const link of targets) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // http:, https:, mailto:
        const report = (reason: string): void => void broken.push({ file, line: index + 1, link, reason });
        const hash = link.indexOf('#');
        const pathPart = decodeURIComponent(hash === -1 ? link : link.slice(0, hash));
        const anchor = hash === -1 ? undefined : decodeURIComponent(link.slice(hash + 1));
        const target = pathPart === '' ? path : resolve(dirname(path), pathPart);
        if (relative(root, target).startsWith('..')) {
          report('points outside the repository');
          continue;
        }
        if (!existsSync(target)) {
          report(`${relative(root, target)} does not exist`);
          continue;
        }
        if (anchor === undefined || anchor === '') continue;
        if (statSync(target).isDirectory() || !target.endsWith('.md')) {
          report(`#${anchor} on a file that is not Markdown`);
          continue;
        }
        if (!anchorsIn(target).has(anchor)) report(`no heading gives #${anchor} in ${relative(root, target)}`);
      }
    });
  }
  return broken;
}

function main(): number {
  const root = resolve(process.argv[2] ?? join(import.meta.dirname, '..'));
  const files = markdownFiles(root);
  const broken = checkLinks(root, files);
  for (const b of broken) console.error(`${b.file}:${b.line}: ${b.link}: ${b.reason}`);
  if (broken.length > 0) {
    console.error(`✘ links: ${broken.length} broken in ${files.length} Markdown file(s)`);
    return 1;
  }
  console.log(`✔ links: every relative link and anchor resolves in ${files.length} Markdown file(s)`);
  return 0;
}

if (import.meta.filename === process.argv[1]) process.exitCode = main();
