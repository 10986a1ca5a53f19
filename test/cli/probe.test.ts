// `kube-balancer probe` as a child process against simulated apiservers: one with the kubeadm
// certificate, one whose certificate is for another name, one signed by a foreign CA.
import test from 'ava';
import { ApiserverCluster } from '../../fixtures/apiserver/index.ts';
import { certs } from '../../fixtures/certs/index.ts';
import { runCli } from '../helpers/cli.ts';

interface ProbeJson {
  kubeconfig: string;
  context: string;
  server: string;
  name: string;
  target: string;
  ok: boolean;
  problems: string[];
  endpoints: Array<{
    address: string;
    port: number;
    tls: { ok: boolean; error: string | null; covers: string[]; issuer: string | null; protocol: string | null };
    readyz: { status: number | null; ok: boolean; detail: string | null };
    latencyMs: number | null;
    problems: string[];
  }>;
}

async function withCluster(run: (cluster: ApiserverCluster, kubeconfig: string) => Promise<void>): Promise<void> {
  const cluster = await ApiserverCluster.start({ hosts: ['127.0.0.2'] });
  try {
    await cluster.addInstance('127.0.0.3', { tls: certs.wrongName });
    await cluster.addInstance('127.0.0.4', { tls: certs.foreign });
    // As a kubeconfig for a real cluster would: one server, and the name every apiserver is verified against.
    const kubeconfig = await cluster.kubeconfigFile({ tlsServerName: 'kubernetes.default.svc' });
    await run(cluster, kubeconfig);
  } finally {
    await cluster.close();
  }
}

test('every apiserver of the EndpointSlice (the default target of fromKubeConfig): TLS verified by name, /readyz, latency, and what to fix', async (t) => {
  await withCluster(async (cluster, kubeconfig) => {
    const port = cluster.port;
    const text = await runCli(['probe', '--kubeconfig', kubeconfig]);
    t.is(text.code, 1, text.stderr);
    t.regex(text.stdout, /^kubeconfig .*, context simulator: server https:\/\/127\.0\.0\.2:\d+; every certificate must cover kubernetes\.default\.svc$/m);
    t.regex(text.stdout, /^3 apiservers from kubernetes:\/\/\/default\/kubernetes$/m);
    t.regex(text.stdout, new RegExp(`^127\\.0\\.0\\.2:${port}\\s+ok \\(h2\\)\\s+ok\\s+[\\d.]+ ms$`, 'm'));
    t.regex(text.stdout, new RegExp(`^127\\.0\\.0\\.3:${port}\\s+wrong name\\s+-\\s+-$`, 'm'));
    t.regex(text.stdout, new RegExp(`^127\\.0\\.0\\.4:${port}\\s+untrusted \\(\\w+\\)\\s+-\\s+-$`, 'm'));
    t.regex(text.stdout, /^ {2}- certificate of 127\.0\.0\.3 does not cover kubernetes\.default\.svc \(it covers DNS:other\.example\): add kubernetes\.default\.svc to its subject alternative names/m);
    t.regex(text.stdout, /^ {2}- certificate of 127\.0\.0\.4 \(issuer CN=foreign\) is not signed by the kubeconfig's CA \(\w+\): put the CA that signed it in certificate-authority-data/m);

    const json = await runCli(['probe', '--kubeconfig', kubeconfig, '--json']);
    t.is(json.code, 1, json.stderr);
    const report = JSON.parse(json.stdout) as ProbeJson;
    t.like(report, { kubeconfig, context: 'simulator', name: 'kubernetes.default.svc', target: 'kubernetes:///default/kubernetes', ok: false });
    t.is(report.server, `https://127.0.0.2:${port}/`);
    t.deepEqual(
      report.endpoints.map((e) => [e.address, e.port, e.tls.ok, e.tls.error, e.readyz.status]),
      [
        ['127.0.0.2', port, true, null, 200],
        ['127.0.0.3', port, false, 'ERR_TLS_CERT_ALTNAME_INVALID', null],
        ['127.0.0.4', port, false, report.endpoints[2]!.tls.error, null],
      ],
    );
    const [good, wrongName, foreign] = report.endpoints;
    t.is(good!.tls.protocol, 'h2');
    t.true(good!.tls.covers.includes('DNS:kubernetes.default.svc'));
    t.true(typeof good!.latencyMs === 'number' && good!.latencyMs >= 0);
    t.deepEqual(good!.problems, []);
    t.deepEqual(wrongName!.tls.covers, ['DNS:other.example']);
    t.is(wrongName!.readyz.detail, 'not asked: the certificate did not verify');
    t.is(foreign!.tls.issuer, 'CN=foreign');
    t.is(report.problems.length, 2);
    t.true(report.problems.every((p) => report.endpoints.some((e) => e.problems.includes(p))));
    t.is(cluster.instance('127.0.0.3').requests.length, 0, 'no request, so no credentials, went to a server that failed verification');
  });
});

test('--target: only those apiservers; all good is exit 0, a shutting-down one is "not ready", exit 1', async (t) => {
  await withCluster(async (cluster, kubeconfig) => {
    const good = cluster.instance('127.0.0.2');
    const ok = await runCli(['probe', '--kubeconfig', kubeconfig, '--target', `static:///${good.authority}`]);
    t.is(ok.code, 0, ok.stdout + ok.stderr);
    t.regex(ok.stdout, new RegExp(`^1 apiserver from static:///127\\.0\\.0\\.2:${cluster.port}$`, 'm'));
    t.regex(ok.stdout, /^all 1 verified and ready$/m);

    const leaving = await cluster.addInstance('127.0.0.5');
    void leaving.shutdown({ delayMs: 60_000 }); // /readyz fails for a minute; closed with the cluster
    const result = await runCli(['probe', '--kubeconfig', kubeconfig, '--target', `static:///${good.authority},${leaving.authority}`, '--json']);
    t.is(result.code, 1, result.stderr);
    const report = JSON.parse(result.stdout) as ProbeJson;
    t.deepEqual(report.endpoints.map((e) => [e.address, e.tls.ok, e.readyz.status]), [['127.0.0.2', true, 200], ['127.0.0.5', true, 500]]);
    t.is(report.problems.length, 1);
    t.regex(report.problems[0]!, /^127\.0\.0\.5:\d+ is not ready \(\/readyz 500: \[-\]shutdown failed: reason withheld\): kube-balancer sends it no requests until it is$/);
  });
});

test('a refused port, an unknown context (exit 2), a missing kubeconfig (exit 2) and a bad target', async (t) => {
  await withCluster(async (cluster, kubeconfig) => {
    const refused = await runCli(['probe', '--kubeconfig', kubeconfig, '--target', 'static:///127.0.0.9:1', '--timeout', '3s']);
    t.is(refused.code, 1);
    t.regex(refused.stdout, /^ {2}- 127\.0\.0\.9:1 refuses connections: no kube-apiserver listens there/m);

    const context = await runCli(['probe', '--kubeconfig', kubeconfig, '--context', 'nope']);
    t.is(context.code, 2);
    t.regex(context.stderr, /^kube-balancer probe: no context "nope" in .* \(contexts: simulator\) \(see kube-balancer probe --help\)\n$/);

    const missing = await runCli(['probe', '--kubeconfig', '/nonexistent/kubeconfig']);
    t.is(missing.code, 2);
    t.regex(missing.stderr, /^kube-balancer probe: --kubeconfig \/nonexistent\/kubeconfig does not exist/);

    const bad = await runCli(['probe', '--kubeconfig', kubeconfig, '--target', 'foo']);
    t.is(bad.code, 2);
    t.regex(bad.stderr, /^kube-balancer probe: invalid target "foo"/);
    const badDns = await runCli(['probe', '--kubeconfig', kubeconfig, '--target', 'dns:///apiservers.example.test.:6443', '--dns-server', 'not-an-ip']);
    t.is(badDns.code, 2);
    t.regex(badDns.stderr, /^kube-balancer probe: --dns-server "not-an-ip" is not an IP address/);
    t.is(cluster.instances.length, 3);
  });
});
