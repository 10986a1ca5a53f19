#!/usr/bin/env node
import { nearestKey } from '../options/knownKeys.ts';
import { EXIT, UsageError } from './args.ts';
import type { Command } from './command.ts';

/** Loaded on demand: `kube-balancer --help` need not load the DNS stack, undici and the simulator. */
const commands: Record<string, { summary: string; load: () => Promise<Command> }> = {
  resolve: { summary: 'list the endpoints a target resolves to (priority, weight, TTL, source)', load: async () => (await import('./resolve.ts')).resolve },
  watch: { summary: 'follow the endpoint set of a target as it changes', load: async () => (await import('./watch.ts')).watch },
  probe: { summary: "check every apiserver of a real cluster: TLS against the kubeconfig's name, /readyz, latency", load: async () => (await import('./probe.ts')).probe },
  demo: { summary: 'kube-balancer vs one connection, live, on simulated apiservers that crash and drain', load: async () => (await import('./demo/command.ts')).demo },
  simulate: { summary: 'run simulated apiservers and write a kubeconfig for them, until Ctrl-C', load: async () => (await import('./simulate.ts')).simulate },
  proxy: { summary: 'a local API proxy (like kubectl proxy) that balances every request of any client', load: async () => (await import('./proxy.ts')).proxy },
};

const USAGE = `usage: kube-balancer <command> [options]

Spread every Kubernetes API request over all kube-apiservers.

commands:
${Object.entries(commands)
  .map(([name, c]) => `  ${name.padEnd(9)}${c.summary}`)
  .join('\n')}

Run kube-balancer <command> --help for a command's options.
Exit codes: 0 success, 1 failure (the command ran and something is wrong), 2 usage error, 130 interrupted.`;

async function main(argv: string[]): Promise<number> {
  // First: an unsupported Node.js or undici is named, in one line, before any command loads them
  // (a static import would throw it as an uncaught error with a stack).
  try {
    await import('../platform.ts');
  } catch (error) {
    console.error(`kube-balancer: ${oneLine(error)}`);
    return EXIT.failure;
  }
  const [name, ...args] = argv;
  if (name === '--help' || name === '-h' || name === 'help') {
    console.log(USAGE);
    return EXIT.ok;
  }
  if (name === undefined) {
    console.error(USAGE);
    return EXIT.usage;
  }
  const entry = commands[name];
  if (!entry) {
    const nearest = nearestKey(name, Object.keys(commands));
    const hint = nearest === undefined ? '' : `did you mean "${nearest}"? `;
    console.error(`kube-balancer: unknown command "${name}" (${hint}commands: ${Object.keys(commands).join(', ')}; see kube-balancer --help)`);
    return EXIT.usage;
  }
  const command = await entry.load();
  const end = args.indexOf('--');
  const flags = end === -1 ? args : args.slice(0, end);
  if (flags.includes('--help') || flags.includes('-h')) {
    console.log(command.help);
    return EXIT.ok;
  }
  try {
    return await command.run(args);
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`kube-balancer ${name}: ${error.message} (see kube-balancer ${name} --help)`);
      return EXIT.usage;
    }
    console.error(`kube-balancer ${name}: ${oneLine(error)}`);
    return EXIT.failure;
  }
}

/** Errors are reported on one line: the message, and its cause's when it adds something. */
function oneLine(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  let text = error.message;
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error && !text.includes(cause.message)) text += `: ${cause.message}`;
  return text.replace(/\s*\n\s*/g, ' ');
}

process.exitCode = await main(process.argv.slice(2));
