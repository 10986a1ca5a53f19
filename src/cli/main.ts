#!/usr/bin/env node
import { demoCommand } from './demo.ts';

const commands: Record<string, (args: string[]) => Promise<number>> = {
  demo: demoCommand,
};

const USAGE = `usage: kube-balancer <command> [options]

commands:
  demo    run requests over local apiserver-like servers, with and without balancing

Run kube-balancer <command> --help for a command's options.`;

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    console.log(USAGE);
    return name === undefined ? 2 : 0;
  }
  const command = commands[name];
  if (!command) {
    console.error(`kube-balancer: unknown command "${name}"\n\n${USAGE}`);
    return 2;
  }
  return command(args);
}

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    console.error(`kube-balancer: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  },
);
