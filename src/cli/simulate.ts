import { resolve } from 'node:path';
import { BalancerError } from '../errors.ts';
import { startApiservers } from '../testing/index.ts';
import { EXIT, interrupted, parse, positiveInteger, UsageError } from './args.ts';
import type { Command } from './command.ts';

const MAX_APISERVERS = 253; // 127.0.0.2–127.0.0.254

export const simulate: Command = {
  help: `usage: kube-balancer simulate [--apiservers N] [--kubeconfig PATH] [--port PORT]

Starts simulated kube-apiservers on 127.0.0.2, 127.0.0.3, … (HTTP/2 and HTTP/1.1 over TLS, one
shared store, one shared port, certificates made for this run), writes a kubeconfig for them and
prints how to use it, then runs until Ctrl-C (SIGINT) or SIGTERM, when it stops them and removes
the kubeconfig. The same servers as kube-balancer/testing's startApiservers() (docs/testing.md).

options:
  --apiservers N     how many apiservers, 1–${MAX_APISERVERS} (default 3)
  --kubeconfig PATH  where to write the kubeconfig; it must not exist yet (default: a new file
                     in a temporary directory)
  --port PORT        the port they all listen on (default: a free one)
  -h, --help         this help

Needs ws and jsrsasign (npm install ws jsrsasign). Linux answers on every 127.0.0.x; on macOS
alias each extra address first (sudo ifconfig lo0 alias 127.0.0.2 up).
Exit codes: 0 stopped by Ctrl-C or SIGTERM, 1 the servers could not start, 2 usage error.`,

  async run(args) {
    const { values } = parse(args, {
      apiservers: { type: 'string', default: '3' },
      kubeconfig: { type: 'string' },
      port: { type: 'string' },
    });
    const count = positiveInteger('--apiservers', values.apiservers);
    if (count > MAX_APISERVERS) throw new UsageError(`--apiservers must be 1–${MAX_APISERVERS}, got ${count}`);
    let port = 0;
    if (values.port !== undefined) {
      port = positiveInteger('--port', values.port);
      if (port > 65_535) throw new UsageError(`--port must be a port number, 1–65535, got ${port}`);
    }
    const kubeconfigPath = values.kubeconfig === undefined ? undefined : resolve(values.kubeconfig);
    // Listening before starting: a signal that comes while the servers start still stops them cleanly.
    const signal = interrupted();
    try {
      let apiservers;
      try {
        apiservers = await startApiservers({ count, port, ...(kubeconfigPath === undefined ? {} : { kubeconfigPath }) });
      } catch (error) {
        if (error instanceof BalancerError && error.message.startsWith('options.kubeconfigPath')) {
          throw new UsageError(`--kubeconfig ${kubeconfigPath}: the file exists, and simulate never overwrites one; pick a new path`);
        }
        throw error;
      }
      try {
        console.log(usage(apiservers));
        await signal.promise;
      } finally {
        await apiservers.close();
      }
      console.error('kube-balancer simulate: stopped; the kubeconfig is removed');
      return EXIT.ok;
    } finally {
      signal.dispose();
    }
  },
};

function usage(apiservers: Awaited<ReturnType<typeof startApiservers>>): string {
  const path = apiservers.kubeconfigPath;
  const q = JSON.stringify;
  return `kube-balancer simulate: ${apiservers.servers.length} apiserver${apiservers.servers.length === 1 ? '' : 's'} running
${apiservers.servers.map((s) => `  ${s.name}  ${s.url}`).join('\n')}
kubeconfig: ${path}
target:     ${apiservers.target}

kubectl (talks to the first apiserver, as the kubeconfig says):
  KUBECONFIG=${path} kubectl get ns

Node, @kubernetes/client-node through kube-balancer (every request spread over all of them):
  import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
  import { attachToKubeConfig } from 'kube-balancer';
  const kc = new KubeConfig();
  kc.loadFromFile(${q(path)});
  await attachToKubeConfig(kc, { target: ${q(apiservers.target)} });
  console.log((await kc.makeApiClient(CoreV1Api).listNamespace()).items.map((ns) => ns.metadata?.name));

Ctrl-C stops them.`;
}
