// `kube-balancer proxy` as a user runs it: it starts, serves through the balancer, stops on SIGTERM.
import test from 'ava';
import * as undici from 'undici';
import { ApiserverCluster } from '../../fixtures/apiserver/index.ts';
import { finished, runCli, spawnCli } from '../helpers/cli.ts';
import { until } from '../helpers/poll.ts';

test('proxy --port 0 serves the cluster over every apiserver and exits 0 on SIGTERM', async (t) => {
  const cluster = await ApiserverCluster.start();
  t.teardown(() => cluster.close());
  const kubeconfig = await cluster.kubeconfigFile();
  const child = spawnCli(['proxy', '--kubeconfig', kubeconfig, '--target', cluster.target, '--port', '0']);
  const done = finished(child, 90_000);
  let out = '';
  child.stdout.on('data', (d: string) => (out += d));
  const url = (await until(() => /Starting to serve on (http:\/\/\S+)/.exec(out)?.[1], { timeoutMs: 60_000, what: 'the proxy to start' }));
  for (let i = 0; i < 9; i++) {
    const res = await undici.request(`${url}/api/v1/namespaces/default/configmaps`);
    t.is(res.statusCode, 200);
    await res.body.dump();
  }
  t.deepEqual(cluster.instances.map((i) => i.requestsWhere({ verb: 'list', resource: 'configmaps' }).length > 0), [true, true, true]);
  child.kill('SIGTERM');
  const result = await done;
  t.is(result.code, 0, result.stderr);
});

test('proxy refuses a non-loopback address without --allow-remote (exit 1) and bad flags (exit 2)', async (t) => {
  const cluster = await ApiserverCluster.start({ hosts: ['127.0.0.2'] });
  t.teardown(() => cluster.close());
  const kubeconfig = await cluster.kubeconfigFile();
  const remote = await runCli(['proxy', '--kubeconfig', kubeconfig, '--target', cluster.target, '--address', '0.0.0.0', '--port', '0']);
  t.is(remote.code, 1);
  t.regex(remote.stderr, /not a loopback address.*--allow-remote/);
  const both = await runCli(['proxy', '--port', '1', '--unix-socket', '/tmp/x.sock']);
  t.is(both.code, 2);
  t.regex(both.stderr, /--port and --unix-socket exclude each other/);
  const hosts = await runCli(['proxy', '--accept-hosts', 'example.com']);
  t.is(hosts.code, 2);
  t.regex(hosts.stderr, /exact host:port/);
});
