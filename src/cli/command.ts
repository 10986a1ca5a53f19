/** One `kube-balancer` command. `main.ts` prints `help` for `--help` and maps thrown errors to exit codes. */
export interface Command {
  /** The whole `--help` text. */
  help: string;
  /** Runs with the arguments after the command name; resolves to the exit code. */
  run(args: string[]): Promise<number>;
}
