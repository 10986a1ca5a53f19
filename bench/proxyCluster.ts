// The three simulated apiservers of `npm run bench -- proxy`, in a child process of their own so
// that their work is neither in the bench's event loop (which times the requests) nor in either
// proxy's CPU. Driven over IPC by bench/proxy.ts: each message `{ id, op, i? }` is answered with
// `{ id, result }` once done; `Cluster` is the bench's end of it.
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiserverCluster, RESOURCES } from '../fixtures/apiserver/index.ts';

export const BENCH_PATH = '/api/v1/namespaces/default/configmaps/bench';

/**
 * How long a graceful shutdown waits for open connections before the process exits and breaks them:
 * kube-apiserver's is 60 s, but a watch held open (kube-balancer proxy's EndpointSlice watch) would then
 * hold the run for a minute per apiserver.
 */
const SHUTDOWN_TIMEOUT_MS = 3000;

export type ClusterOp = 'counts' | 'reset' | 'crash' | 'restart' | 'revive' | 'close';

export interface ClusterInfo {
  port: number;
  token: string;
  hosts: string[];
  /** The cluster's kubeconfig (token user, the test CA), its server the first instance. */
  kubeconfig: string;
}

/** The apiserver child process, driven by request/answer messages. */
export class Cluster {
  #next = 0;
  readonly #waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  readonly child: ChildProcess;
  readonly info: ClusterInfo;
  private constructor(child: ChildProcess, info: ClusterInfo) {
    this.child = child;
    this.info = info;
    child.on('message', (m: { id?: number; result?: unknown; error?: string }) => {
      const waiter = m.id === undefined ? undefined : this.#waiting.get(m.id);
      if (!waiter) return;
      this.#waiting.delete(m.id!);
      if (m.error === undefined) waiter.resolve(m.result);
      else waiter.reject(new Error(m.error));
    });
  }

  static async start(): Promise<Cluster> {
    const child = fork(join(import.meta.dirname, 'proxyCluster.ts'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const [message] = (await once(child, 'message')) as [{ ready: ClusterInfo }];
    return new Cluster(child, message.ready);
  }

  call<T = void>(op: ClusterOp, i?: number): Promise<T> {
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      this.#waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.send({ id, op, ...(i === undefined ? {} : { i }) });
    });
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = once(this.child, 'exit');
    await this.call('close').catch(() => undefined);
    await Promise.race([exited, sleep(3000).then(() => this.child.kill('SIGKILL'))]);
  }
}

if (import.meta.main) {
  const cluster = await ApiserverCluster.start();
  cluster.store.create(RESOURCES.configmaps, { metadata: { name: 'bench', namespace: 'default' }, data: { key: 'value' } });
  const instance = (i: number | undefined) => cluster.instances[i ?? -1]!;
  const ops: Record<ClusterOp, (i?: number) => Promise<unknown>> = {
    // The bench's GETs each instance saw since the last reset: probes and discovery left out.
    counts: () => Promise.resolve(cluster.instances.map((s) => s.requests.filter((r) => r.path === BENCH_PATH).length)),
    reset: () => Promise.resolve(cluster.instances.forEach((s) => s.resetCounters())),
    crash: async (i) => instance(i).crash(),
    // A graceful restart with kube-apiserver's defaults (no shutdown delay; 503 + Retry-After on open
    // connections while it drains), resolved once it is ready again.
    restart: async (i) => {
      await instance(i).restart({ shutdown: { timeoutMs: SHUTDOWN_TIMEOUT_MS } });
      await instance(i).waitForState('running');
    },
    revive: async (i) => {
      await instance(i).restart();
      await instance(i).waitForState('running');
    },
    close: async () => {
      await cluster.close();
      setImmediate(() => process.exit(0));
    },
  };
  process.on('message', (message: { id: number; op: ClusterOp; i?: number }) => {
    void ops[message.op](message.i).then(
      (result) => process.send!({ id: message.id, result }),
      (error: unknown) => process.send!({ id: message.id, error: String(error) }),
    );
  });
  process.send!({ ready: { port: cluster.port, token: cluster.token, hosts: cluster.instances.map((s) => s.host), kubeconfig: cluster.kubeconfig() } });
}
