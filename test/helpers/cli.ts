import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';

const MAIN = join(import.meta.dirname, '../../src/cli/main.ts');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Starts `kube-balancer <args>` (from source) as a child process, without colours. */
export function spawnCli(args: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, [MAIN, ...args], { cwd: options.cwd, env: { ...process.env, NO_COLOR: '1', ...options.env } });
}

/**
 * How long a CLI run may take by default: a hang's bound, not a speed check. A run loads the CLI
 * from source (~2 s of CPU for `probe`, which loads @kubernetes/client-node); on a loaded machine,
 * three such runs at once, under coverage, took over 30 s with nothing printed yet.
 */
export const CLI_TIMEOUT_MS = 90_000;

/** Runs `kube-balancer <args>` to the end; killed (and the promise rejected) after `timeoutMs`. */
export function runCli(args: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<CliResult> {
  const child = spawnCli(args, options);
  return finished(child, options.timeoutMs ?? CLI_TIMEOUT_MS, args);
}

/**
 * Collects a child's output until it exits; killed (and the promise rejected) `timeoutMs` after
 * `from` resolves: the spawn by default, or e.g. the signal that asks a server to stop.
 */
export function finished(child: ChildProcessWithoutNullStreams, timeoutMs: number, args: readonly string[] = [], from: Promise<void> = Promise.resolve()): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve, reject) => {
    let exited = false;
    let timer: NodeJS.Timeout | undefined;
    void from.then(() => {
      if (exited) return;
      timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`kube-balancer ${args.join(' ')} did not exit within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
      }, timeoutMs);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      exited = true;
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
