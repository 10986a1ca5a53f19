// The deployment recipes of docs/deploy/ are the exact manifests docs/proxy.md shows: each parses,
// has the objects it needs, and runs the proxy with flags the CLI knows and values that fit together.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { KubeConfig, loadAllYaml } from '@kubernetes/client-node';
import { proxy } from '../../src/cli/proxy.ts';

interface Container {
  name: string;
  command?: string[];
  args?: string[];
  env?: Array<{ name: string; value?: string }>;
  restartPolicy?: string;
  volumeMounts?: Array<{ name: string; mountPath: string }>;
  startupProbe?: { exec?: { command: string[] } };
  livenessProbe?: { httpGet?: { path: string; port: number; host: string } };
}
interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  data?: Record<string, string>;
  spec?: { template: { spec: { hostNetwork?: boolean; serviceAccountName?: string; containers: Container[]; initContainers?: Container[] } } };
}

const load = async (name: string): Promise<KubeObject[]> => loadAllYaml(await readFile(join(import.meta.dirname, '../../docs/deploy', name), 'utf8')) as KubeObject[];

/** The proxy's flags and values from a container's args, each flag checked against `kube-balancer proxy --help`. */
function proxyFlags(t: { true(value: boolean, message?: string): void }, container: Container): Map<string, string> {
  const args = container.args ?? [];
  t.true(container.command?.at(-1) === 'kube-balancer' && args[0] === 'proxy', 'runs kube-balancer proxy');
  const flags = new Map<string, string>();
  for (let i = 1; i < args.length; i += 2) {
    t.true(proxy.help.includes(`  ${args[i]!} `), `${args[i]} is a flag of kube-balancer proxy`);
    flags.set(args[i]!, args[i + 1]!);
  }
  return flags;
}

test('sidecar.yaml: the app container reads a kubeconfig whose server is the sidecar proxy on loopback', async (t) => {
  const objects = await load('sidecar.yaml');
  t.deepEqual(objects.map((o) => o.kind), ['ServiceAccount', 'Role', 'RoleBinding', 'ConfigMap', 'Deployment']);
  const deployment = objects.find((o) => o.kind === 'Deployment')!;
  const pod = deployment.spec!.template.spec;
  t.is(pod.serviceAccountName, objects[0]!.metadata.name);
  const sidecar = pod.initContainers!.find((c) => c.name === 'kube-balancer')!;
  t.is(sidecar.restartPolicy, 'Always', 'a native sidecar');
  const flags = proxyFlags(t, sidecar);
  t.is(flags.get('--address'), '127.0.0.1');
  const port = flags.get('--port')!;
  t.true(sidecar.startupProbe!.exec!.command.includes(`http://127.0.0.1:${port}/.kube-balancer/healthz`));

  const app = pod.containers.find((c) => c.name === 'app')!;
  const kubeconfigPath = app.env!.find((e) => e.name === 'KUBECONFIG')!.value!;
  const mount = app.volumeMounts!.find((m) => kubeconfigPath.startsWith(`${m.mountPath}/`))!;
  t.truthy(mount, 'KUBECONFIG is on a mounted volume');
  const configMap = objects.find((o) => o.kind === 'ConfigMap')!;
  const kc = new KubeConfig();
  kc.loadFromString(configMap.data![kubeconfigPath.slice(mount.mountPath.length + 1)]!);
  t.is(kc.getCurrentCluster()!.server, `http://127.0.0.1:${port}`);
  const user = kc.getCurrentUser()!;
  t.true(user.token === undefined && user.certData === undefined && user.exec === undefined, 'no credentials: the proxy adds them');
  const binding = objects.find((o) => o.kind === 'RoleBinding') as unknown as { subjects: Array<{ name: string; namespace: string }> };
  t.like(binding.subjects[0], { kind: 'ServiceAccount', name: 'my-app', namespace: deployment.metadata.namespace });
});

test('node-local-daemonset.yaml: the proxy on every node, host network, loopback, with the mounted kubeconfig', async (t) => {
  const objects = await load('node-local-daemonset.yaml');
  t.deepEqual(objects.map((o) => o.kind), ['Namespace', 'DaemonSet']);
  const pod = objects[1]!.spec!.template.spec;
  t.true(pod.hostNetwork);
  const container = pod.containers[0]!;
  const flags = proxyFlags(t, container);
  t.is(flags.get('--address'), '127.0.0.1', 'node loopback only: no --allow-remote');
  t.false(flags.has('--allow-remote'));
  t.true(container.volumeMounts!.some((m) => flags.get('--kubeconfig')!.startsWith(`${m.mountPath}/`)));
  t.like(container.livenessProbe!.httpGet, { path: '/.kube-balancer/healthz', port: Number(flags.get('--port')), host: '127.0.0.1' });
});
