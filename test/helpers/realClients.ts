// Running real clients (kubectl and the like) as child processes, and local TCP connections through a
// `kubectl port-forward`: shared by the proxy's real-client tests.
import { execFileSync, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import net from 'node:net';

export function works(command: string, args: string[]): boolean {
  try {
    execFileSync(command, args, { stdio: 'ignore', timeout: 30_000 });
    return true;
  } catch {
    return false;
  }
}

export interface Run {
  command: string;
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a client to its end (bounded: 60 s), with KUBECONFIG set. */
export function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ command: `${command} ${args.join(' ')}`, code, stdout, stderr });
    });
  });
}

/** A long-running client (a watch, a followed log, a port-forward). */
export interface Followed {
  /** Its stdout so far. */
  output: () => string;
  /** Its stderr so far. */
  errors: () => string;
  /** Its run once it has exited by itself (its own exit code), else undefined. */
  exited: () => Run | undefined;
  /** Ends it (SIGTERM) if it still runs; resolves to its run (code 0 when we stopped it: the signal is ours). */
  stop: () => Promise<Run>;
}

export function follow(command: string, args: string[], env: NodeJS.ProcessEnv): Followed {
  const child = spawn(command, args, { env: { ...process.env, ...env } });
  const commandLine = `${command} ${args.join(' ')}`;
  let stdout = '';
  let stderr = '';
  let exited: Run | undefined;
  let stopping = false;
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const closed = new Promise<void>((resolve) =>
    child.on('close', (code) => {
      if (!stopping) exited = { command: commandLine, code, stdout, stderr };
      resolve();
    }),
  );
  return {
    output: () => stdout,
    errors: () => stderr,
    exited: () => exited,
    stop: async () => {
      if (exited) return exited;
      stopping = true;
      child.kill('SIGTERM');
      // Bounded: a client that ignores SIGTERM is killed.
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await closed;
      clearTimeout(timer);
      // Stopped by us: what counts is what it printed and said on stderr, not the signal's exit code.
      return { command: commandLine, code: 0, stdout, stderr };
    },
  };
}

/** Writes a kubeconfig that sends everything to the proxy at `url` (no credentials: the proxy adds them). */
export async function writeProxyKubeconfig(file: string, url: string): Promise<void> {
  await writeFile(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: proxy, cluster: {server: "${url}"}}]`,
      'users: [{name: via-proxy, user: {}}]',
      'contexts: [{name: proxy, context: {cluster: proxy, user: via-proxy, namespace: default}}]',
      'current-context: proxy',
      '',
    ].join('\n'),
  );
}

/** A port free on 127.0.0.1 now (kubectl port-forward binds it a moment later). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Sends `payload` on a new connection to the local port and reads until as many bytes came back (bounded: 30 s). */
export function echoThrough(port: number, payload: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(payload));
    const chunks: Buffer[] = [];
    let received = 0;
    socket.setTimeout(30_000, () => socket.destroy(new Error(`${received} of ${payload.length} bytes back in 30 s`)));
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      received += chunk.length;
      if (received >= payload.length) socket.end();
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks)));
  });
}

/** One local connection through a port-forward to the pod's echo port, kept open across exchanges. */
export interface EchoConnection {
  /** Sends `payload` and resolves to whether the same bytes came back (false if the connection ended first; bounded: 30 s). */
  exchange(payload: Buffer): Promise<boolean>;
  /** Whether the connection has closed, and how (an error, or none). */
  closed(): { error: Error | undefined } | undefined;
  destroy(): void;
}

export function openEcho(port: number): Promise<EchoConnection> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let buffered = Buffer.alloc(0);
    let closed: { error: Error | undefined } | undefined;
    let lastError: Error | undefined;
    let waiter: (() => void) | undefined;
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      waiter?.();
    });
    socket.on('error', (error) => (lastError = error));
    socket.on('close', () => {
      closed = { error: lastError };
      waiter?.();
    });
    // The client's end comes back as our end: close our side too, so that the connection goes.
    socket.on('end', () => socket.end());
    socket.once('connect', () =>
      resolve({
        exchange: (payload) =>
          new Promise((done) => {
            if (closed) return done(false);
            buffered = Buffer.alloc(0);
            const timer = setTimeout(() => finish(), 30_000);
            const finish = (): void => {
              clearTimeout(timer);
              waiter = undefined;
              done(buffered.subarray(0, payload.length).equals(payload));
            };
            waiter = () => {
              if (buffered.length >= payload.length || closed) finish();
            };
            socket.write(payload);
          }),
        closed: () => closed,
        destroy: () => socket.destroy(),
      }),
    );
    socket.once('error', reject);
  });
}
