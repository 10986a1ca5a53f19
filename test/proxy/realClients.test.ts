// Real clients through the proxy to three simulated apiservers while they restart one after another:
// kubectl 1.32 (get, get -w, create with a protobuf body, apply, patch, delete, logs -f, exec; and
// port-forward, SPDY/3.1 tunnelled in a WebSocket and plain, here without the restart: across one in
// portForwardRestart.test.ts), kubectl 1.20 (Debian kubernetes-client, unpacked by .ci/run: the
// same commands across the restart, exec and port-forward over plain SPDY/3.1), Python's `kubernetes` (Debian python3-kubernetes: list, watch,
// exec) and Ruby's kubeclient (Debian ruby-kubeclient: list, watch). A client missing from the
// machine fails its test, naming the Debian package (.ci/run installs them).
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { ApiserverCluster } from '../../fixtures/apiserver/index.ts';
import { until } from '../helpers/poll.ts';
import { echoThrough, follow, freePort, run, works, writeProxyKubeconfig, type Run } from '../helpers/realClients.ts';
import { apiRequests, proxiedCluster } from './helpers.ts';

/** Debian's kubectl 1.20 (kubernetes-client), unpacked beside the image's kubectl by .ci/run. */
const KUBECTL_1_20 = process.env.KUBECTL_1_20 ?? join(tmpdir(), 'kube-balancer-kubectl-1.20/usr/bin/kubectl');

/** Debian's python3 (pyenv's first on the PATH of some machines has no `kubernetes`). */
const PYTHON = '/usr/bin/python3';

/** Restarts each apiserver in turn (graceful, as a rolling upgrade does), each back and ready before the next. */
async function rollingRestart(cluster: ApiserverCluster): Promise<void> {
  for (const instance of cluster.instances) {
    await instance.restart({ shutdown: { drainMs: 500, timeoutMs: 2_000 } });
    await instance.waitForState('running');
  }
}

async function setUp(t: { teardown(fn: () => Promise<void>): void }) {
  const { cluster, proxy, close } = await proxiedCluster();
  t.teardown(close);
  cluster.addPod('p');
  const dir = (await cluster.kubeconfigFile()).replace(/\/[^/]+$/, '');
  const kubeconfig = join(dir, 'via-proxy.yaml');
  await writeProxyKubeconfig(kubeconfig, proxy.url!);
  return { cluster, proxy, env: { KUBECONFIG: kubeconfig }, dir };
}

const kubectl = works('kubectl', ['version', '--client']);
const kubectl120 = works(KUBECTL_1_20, ['version', '--client']);

// kubectl 1.32, and Debian's 1.20, which speaks exec and port-forward in SPDY/3.1 only.
for (const [version, command] of [
  ['1.32', 'kubectl'],
  ['1.20', KUBECTL_1_20],
] as const) {
  test(`kubectl ${version} through the proxy, every command succeeding across a rolling restart`, async (t) => {
    if (command === 'kubectl' && !kubectl) return t.fail('kubectl is not on the PATH');
    if (command === KUBECTL_1_20 && !kubectl120) return t.fail(`kubectl 1.20 is not at ${KUBECTL_1_20}: .ci/run unpacks Debian's kubernetes-client there`);
    const { cluster, proxy, env, dir } = await setUp(t);
    const manifest = join(dir, 'applied.yaml');
    const restart = rollingRestart(cluster);
    let restarted = false;
    void restart.then(() => (restarted = true));
    const runs: Run[] = [];
    // Rounds go on until the restart is over (at least two, at most eight: a bound, not a target).
    for (let round = 0; round < 8 && (round < 2 || !restarted); round++) {
      const name = `cm-${round}`;
      await writeFile(manifest, `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: applied-${round}}\ndata: {round: "${round}"}\n`);
      for (const args of [
        ['create', 'configmap', name, `--from-literal=round=${round}`],
        ['get', 'configmap', name, '-o', 'jsonpath={.data.round}'],
        ['patch', 'configmap', name, '-p', '{"data":{"patched":"yes"}}'],
        // No /openapi on the simulator: client-side validation off (the apply itself is unchanged).
        ['apply', '--validate=false', '-f', manifest],
        ['get', 'configmaps'],
        ['exec', 'p', '--', 'echo', `round ${round}`],
        ['delete', 'configmap', name],
      ]) {
        runs.push(await run(command, args, env));
      }
    }
    await restart;
    // kubectl get -w and logs -f end (exit 0) when their apiserver restarts: kubectl does not watch
    // again. So they run after the restart, each on the apiserver the proxy picks for it.
    const watch = follow(command, ['get', 'configmaps', '-w', '-o', 'name'], env);
    const logs = follow(command, ['logs', '-f', 'p'], env);
    await until(() => logs.output().split('\n').length > 5, { what: 'the followed log to show lines', timeoutMs: 60_000 });
    runs.push(await run(command, ['create', 'configmap', 'after-restart'], env));
    await until(() => watch.output().includes('configmap/after-restart'), { what: 'the watch to show the new map', timeoutMs: 60_000 });
    runs.push(await watch.stop(), await logs.stop());
    const failed = runs.filter((r) => r.code !== 0 || /error/i.test(r.stderr));
    t.deepEqual(failed, [], 'no kubectl command failed');
    t.true(runs.some((r) => r.command.includes('exec') && r.stdout === 'round 1\n'));
    t.true(runs.some((r) => r.command.includes('get configmap cm-0') && r.stdout === '0'));
    const perInstance = cluster.instances.map((i) => i.requests.filter((r) => !['/readyz', '/livez', '/healthz'].some((p) => r.path.startsWith(p))).length);
    t.log(`${runs.length} kubectl commands; API requests per apiserver ${perInstance.join('/')} (${apiRequests(cluster)} in all); proxy ${JSON.stringify(proxy.counters())}`);
    t.true(perInstance.every((n) => n > 0), 'every apiserver served some');
  });
}

const python = works(PYTHON, ['-c', 'import kubernetes, websocket']);
test('Python kubernetes (python3-kubernetes) through the proxy: list, watch, exec across a rolling restart', async (t) => {
  if (!python) return t.fail("Python's kubernetes is missing: apt-get install python3-kubernetes");
  const { cluster, env } = await setUp(t);
  const script = [
    'import os',
    'from kubernetes import client, config, watch',
    'from kubernetes.stream import stream',
    'config.load_kube_config(config_file=os.environ["KUBECONFIG"])',
    'v1 = client.CoreV1Api()',
    'for i in range(6):',
    '    v1.create_namespaced_config_map("default", {"metadata": {"name": "py-%d" % i}, "data": {"i": str(i)}})',
    '    print("list", len(v1.list_namespaced_config_map("default").items))',
    '    for ev in watch.Watch().stream(v1.list_namespaced_config_map, "default", timeout_seconds=1):',
    '        pass',
    '    print("watched", ev["type"], ev["object"].metadata.name)',
    '    out = stream(v1.connect_get_namespaced_pod_exec, "p", "default", command=["echo", "py %d" % i], stderr=True, stdin=False, stdout=True, tty=False)',
    '    print("exec", out.strip())',
  ].join('\n');
  const [result] = await Promise.all([run(PYTHON, ['-c', script], env), rollingRestart(cluster)]);
  t.is(result.code, 0, result.stderr);
  t.regex(result.stdout, /^exec py 5$/m);
  t.regex(result.stdout, /^list 6$/m);
  t.regex(result.stdout, /^watched ADDED py-5$/m);
});

const ruby = works('ruby', ['-e', 'require "kubeclient"']);
test('Ruby kubeclient (ruby-kubeclient) through the proxy: list and watch across a rolling restart', async (t) => {
  if (!ruby) return t.fail("Ruby's kubeclient is missing: apt-get install ruby-kubeclient");
  const { cluster, proxy, env } = await setUp(t);
  const script = [
    'c = Kubeclient::Client.new("#{ARGV[0]}/api", "v1")',
    '6.times do |i|',
    '  c.create_config_map(Kubeclient::Resource.new(metadata: { name: "rb-#{i}", namespace: "default" }, data: { i: i.to_s }))',
    '  puts "list #{c.get_config_maps(namespace: "default").size}"',
    '  last = nil',
    // kubeclient 4.9 has no timeoutSeconds: the watch is ended once it has shown this round's map.
    '  w = c.watch_config_maps(namespace: "default")',
    '  w.each { |n| if n.object.metadata.name == "rb-#{i}" then last = "#{n.type} #{n.object.metadata.name}"; w.finish end }',
    '  puts "watched #{last}"',
    'end',
  ].join('\n');
  const [result] = await Promise.all([run('ruby', ['-rkubeclient', '-e', script, proxy.url!], env), rollingRestart(cluster)]);
  t.is(result.code, 0, result.stderr);
  t.regex(result.stdout, /^list 6$/m);
  t.regex(result.stdout, /^watched ADDED rb-5$/m);
});

for (const [mode, command, extraEnv, method] of [
  ['kubectl 1.32, SPDY/3.1 tunnelled in a WebSocket (the default)', 'kubectl', {}, 'GET'],
  ['kubectl 1.32, plain SPDY/3.1 (KUBECTL_PORT_FORWARD_WEBSOCKETS=false)', 'kubectl', { KUBECTL_PORT_FORWARD_WEBSOCKETS: 'false' }, 'POST'],
  ['kubectl 1.20, plain SPDY/3.1', KUBECTL_1_20, {}, 'POST'],
] as const) {
  test(`port-forward through the proxy: ${mode}`, async (t) => {
    if (command === 'kubectl' && !kubectl) return t.fail('kubectl is not on the PATH');
    if (command === KUBECTL_1_20 && !kubectl120) return t.fail(`kubectl 1.20 is not at ${KUBECTL_1_20}: .ci/run unpacks Debian's kubernetes-client there`);
    const { cluster, proxy, env } = await setUp(t);
    const local = await freePort();
    const forward = follow(command, ['port-forward', 'pod/p', `${local}:8080`], { ...env, ...extraEnv });
    let stopped: Run | undefined;
    t.teardown(async () => {
      stopped ??= await forward.stop();
    });
    await until(() => forward.output().includes(`Forwarding from 127.0.0.1:${local}`), { what: 'kubectl to listen', timeoutMs: 30_000 });
    // Over 64 KiB (the initial SPDY/3.1 window) once, then small ones: a stream pair per connection.
    const payloads = [randomBytes(300 * 1024), Buffer.from('hello\n'), randomBytes(1000)];
    const echoed: boolean[] = [];
    for (const payload of payloads) echoed.push((await echoThrough(local, payload)).equals(payload));
    stopped = await forward.stop();
    t.deepEqual(echoed, [true, true, true], 'every connection came back byte for byte');
    t.notRegex(stopped.stderr, /error|unable|lost/i, 'kubectl reported no failure');
    t.is((stopped.stdout.match(/Handling connection for/g) ?? []).length, payloads.length);
    const upgrades = cluster.instances.flatMap((i) => i.requests).filter((r) => r.subresource === 'portforward');
    t.deepEqual(upgrades.map((r) => [r.method, r.status]), [[method, 101]], 'one upgrade, switched, in the expected protocol');
    t.is(proxy.counters().upgrades, 1, 'the upgrade went through the proxy');
  });
}
