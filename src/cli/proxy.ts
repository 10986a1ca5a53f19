import { createProxy } from '../proxy/createProxy.ts';
import { isLoopback } from '../proxy/listen.ts';
import { EXIT, interrupted, parse, UsageError } from './args.ts';
import type { Command } from './command.ts';
import { loadClusterAccess } from './kubeconfig.ts';

export const proxy: Command = {
  help: `usage: kube-balancer proxy [--port N | --unix-socket PATH] [--address ADDR] [--kubeconfig FILE]
                           [--context NAME] [--target URI] [--api-prefix PATH] [--accept-hosts LIST]
                           [--reject-paths LIST] [--reject-methods LIST] [--allow-remote]

Serves the Kubernetes API on a local HTTP/1.1 port, as kubectl proxy does, but sends every request to
the next apiserver (health, drain, safe retries, hedging and watch placement included) with the
kubeconfig's credentials added. Watches and followed logs stream as they come; exec, attach and
port-forward (WebSocket and SPDY) are carried to one apiserver. Point any client at it:
kubectl -s http://127.0.0.1:8001, or a kubeconfig whose server is that URL.

options:
  --port N              TCP port; 0 picks a free one (default 8001)
  --address ADDR        address to listen on (default 127.0.0.1); not loopback needs --allow-remote
  --unix-socket PATH    listen on a unix socket instead (mode 0600, its directory 0700)
  --allow-remote        listen on a non-loopback --address: anyone who reaches it acts with the
                        kubeconfig's credentials
  --api-prefix PATH     serve the API under PATH (default /)
  --accept-hosts LIST   more Host values to answer to, comma-separated, each exactly host:port
                        (default: the listen address and localhost, with the port)
  --reject-paths LIST   regular expressions, comma-separated: paths refused with 403 (default none)
  --reject-methods LIST methods refused with 403, comma-separated (default none)
  --kubeconfig FILE     default: $KUBECONFIG, else ~/.kube/config, else the in-cluster service account
  --context NAME        default: the kubeconfig's current-context
  --target URI          where the apiservers are: dns+srv:///…, dns:///name:port, static:///ip:port,…,
                        kubernetes:///namespace/service (default: the default/kubernetes EndpointSlice)
  -h, --help            this help

Refused always: a Host not accepted (DNS rebinding), an Origin that is not the proxy's or
Sec-Fetch-Site: cross-site (upgrades too), CONNECT and absolute-form requests. The proxy's own
health and metrics: /.kube-balancer/healthz, /.kube-balancer/metrics.

Exit codes: 0 stopped by Ctrl-C or SIGTERM, 1 could not start, 2 usage error.`,

  async run(args) {
    const { values } = parse(args, {
      port: { type: 'string' },
      address: { type: 'string', default: '127.0.0.1' },
      'unix-socket': { type: 'string' },
      'allow-remote': { type: 'boolean', default: false },
      'api-prefix': { type: 'string', default: '/' },
      'accept-hosts': { type: 'string' },
      'reject-paths': { type: 'string' },
      'reject-methods': { type: 'string' },
      kubeconfig: { type: 'string' },
      context: { type: 'string' },
      target: { type: 'string' },
    });
    if (values['unix-socket'] !== undefined && values.port !== undefined) throw new UsageError('--port and --unix-socket exclude each other');
    const port = values.port === undefined ? 8001 : Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be a port number (0 picks a free one), got "${values.port}"`);
    if (!values['api-prefix'].startsWith('/')) throw new UsageError(`--api-prefix must start with /, got "${values['api-prefix']}"`);
    const rejectPaths = list(values['reject-paths']).map((p) => {
      try {
        return new RegExp(p);
      } catch {
        throw new UsageError(`--reject-paths: "${p}" is not a regular expression`);
      }
    });
    const acceptHosts = list(values['accept-hosts']);
    for (const host of acceptHosts) if (!/:\d+$/.test(host)) throw new UsageError(`--accept-hosts takes exact host:port values, got "${host}"`);
    const access = await loadClusterAccess(values.kubeconfig, values.context);
    const remote = values['unix-socket'] === undefined && !isLoopback(values.address);
    if (remote && values['allow-remote']) {
      console.error(`kube-balancer proxy: WARNING: listening on ${values.address}: anyone who can reach it acts as ${access.context}'s user`);
    }
    const server = await createProxy({
      kubeConfig: access.kubeConfig,
      balancerOptions: values.target === undefined ? {} : { target: values.target },
      ...(values['unix-socket'] !== undefined ? { unixSocket: values['unix-socket'] } : { address: values.address, port, allowRemote: values['allow-remote'] }),
      apiPrefix: values['api-prefix'],
      acceptHosts,
      rejectPaths,
      rejectMethods: list(values['reject-methods']),
    });
    console.log(`Starting to serve on ${server.url ?? values['unix-socket']} (context ${access.context}, ${access.source})`);
    const signal = interrupted();
    await signal.promise;
    await server.close();
    return EXIT.ok;
  },
};

function list(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}
