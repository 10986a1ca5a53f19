// @kubernetes/client-node and kubernetes-fluent-client are optional peers: the main entry never
// loads them; the Kubernetes helpers load them when called.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import test from 'ava';

test('the package declares them as optional peers, and importing it loads neither', async (t) => {
  const pkg = (await import('../../package.json', { with: { type: 'json' } })).default as {
    peerDependencies: Record<string, string>;
    peerDependenciesMeta: Record<string, { optional: boolean }>;
  };
  for (const name of ['@kubernetes/client-node', 'kubernetes-fluent-client']) {
    t.truthy(pkg.peerDependencies[name], name);
    t.deepEqual(pkg.peerDependenciesMeta[name], { optional: true });
  }
  // Through the package's self-reference, as a user imports it (npm test builds dist first).
  const script = `
    import { registerHooks } from 'node:module';
    const loaded = [];
    const watched = ['@kubernetes/client-node', 'kubernetes-fluent-client'];
    registerHooks({ resolve(specifier, context, next) { if (watched.some((w) => specifier.startsWith(w))) loaded.push(specifier); return next(specifier, context); } });
    const main = await import('kube-balancer');
    const balancer = main.createBalancer({ origin: 'https://kubernetes.default.svc', target: 'static:///127.0.0.9:6443', probe: false });
    await balancer.close();
    const before = [...loaded];
    process.env.KUBECONFIG = '/nonexistent-kubeconfig';
    const kc = await main.loadBalancedKubeConfig().catch((error) => error);
    console.log(JSON.stringify({ before, after: loaded, loadedKubeConfig: typeof kc?.makeApiClient }));
  `;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { cwd: import.meta.dirname });
  const result = JSON.parse(stdout) as { before: string[]; after: string[]; loadedKubeConfig: string };
  t.deepEqual(result.before, [], 'createBalancer needs neither');
  t.true(result.after.includes('@kubernetes/client-node'), 'loadBalancedKubeConfig loads client-node when called');
});
