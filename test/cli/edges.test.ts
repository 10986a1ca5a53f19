// The CLI's edges as a new user meets them: a kubeconfig that is missing or wrong is exit 2 with one
// sentence naming the file; a misspelt command or flag gets a "did you mean".
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { UsageError } from '../../src/cli/args.ts';
import { loadClusterAccess } from '../../src/cli/kubeconfig.ts';
import { runCli } from '../helpers/cli.ts';

const KUBECONFIG = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: { server: 'https://127.0.0.9:6443' }
users:
- name: u
  user: { token: t }
contexts:
- name: one
  context: { cluster: c, user: u }
`;

async function withDir(run: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'kb-cli-edges-'));
  try {
    await run(dir);
  } finally {
    await chmod(dir, 0o700).catch(() => {});
    await rm(dir, { recursive: true, force: true });
  }
}

test('each way a --kubeconfig file is wrong is a usage error naming the file and what is wrong', async (t) => {
  await withDir(async (dir) => {
    const file = async (name: string, text: string): Promise<string> => {
      await writeFile(join(dir, name), text);
      return join(dir, name);
    };
    const cases: [string, string | undefined, RegExp][] = [
      [join(dir, 'absent'), undefined, /^--kubeconfig \S+\/absent does not exist$/],
      [join(dir, 'absent', 'config'), undefined, /^--kubeconfig \S+\/absent\/config does not exist$/],
      [dir, undefined, /^--kubeconfig \S+ is a directory, not a kubeconfig file$/],
      [await file('broken', 'clusters: [one\n'), undefined, /^--kubeconfig \S+\/broken is not YAML: /],
      [await file('empty', ''), undefined, /^--kubeconfig \S+\/empty is not YAML: expected a document, but the input is empty/],
      [await file('notes', 'groceries: [milk, eggs]\n'), undefined, /^--kubeconfig \S+\/notes is YAML but not a kubeconfig: it lists no clusters and no contexts$/],
      [await file('list', '- a\n- b\n'), undefined, /is YAML but not a kubeconfig/],
      [await file('good', KUBECONFIG), 'two', /^no context "two" in \S+\/good \(contexts: one\)$/],
      [await file('nocurrent', KUBECONFIG), undefined, /^\S+\/nocurrent has no current context with a cluster: pass --context NAME \(contexts: one\)$/],
    ];
    if (process.getuid?.() !== 0) {
      const locked = await file('locked', KUBECONFIG);
      await chmod(locked, 0);
      cases.push([locked, undefined, /^--kubeconfig \S+\/locked cannot be read \(permission denied\)$/]);
    } else {
      t.log('running as root: an unreadable file cannot be made');
    }
    for (const [path, context, message] of cases) {
      await t.throwsAsync(loadClusterAccess(path, context), { instanceOf: UsageError, message }, path);
    }
    // Not a usage error: a good file loads.
    t.is((await loadClusterAccess(join(dir, 'good'), 'one')).context, 'one');
  });
});

test('probe --kubeconfig /nonexistent: exit 2, one line naming the file', async (t) => {
  const result = await runCli(['probe', '--kubeconfig', '/nonexistent/kubeconfig']);
  t.is(result.code, 2);
  t.is(result.stdout, '');
  t.is(result.stderr, 'kube-balancer probe: --kubeconfig /nonexistent/kubeconfig does not exist (see kube-balancer probe --help)\n');
});

test('a misspelt command or flag: "did you mean", exit 2; nothing close: no guess', async (t) => {
  const command = await runCli(['resolv', 'dns:///x.example.test:6443']);
  t.is(command.code, 2);
  t.regex(command.stderr, /^kube-balancer: unknown command "resolv" \(did you mean "resolve"\? commands: resolve, watch, probe, demo[^;]*; see kube-balancer --help\)\n$/);
  const flag = await runCli(['resolve', '--jsn', 'static:///127.0.0.2:6443']);
  t.is(flag.code, 2);
  t.is(flag.stderr, 'kube-balancer resolve: unknown option --jsn (did you mean --json?) (see kube-balancer resolve --help)\n');
  const probe = await runCli(['probe', '--kubconfig=x']);
  t.is(probe.code, 2);
  t.is(probe.stderr, 'kube-balancer probe: unknown option --kubconfig (did you mean --kubeconfig?) (see kube-balancer probe --help)\n');
  const far = await runCli(['frobnicate']);
  t.notRegex(far.stderr, /did you mean/);
});
