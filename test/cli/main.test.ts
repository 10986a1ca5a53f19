// The command line as a user meets it: usage, --help on every command, one-line errors, exit codes.
import test from 'ava';
import { optional } from '../../src/cli/optional.ts';
import { runCli } from '../helpers/cli.ts';

const COMMANDS = ['resolve', 'watch', 'probe', 'demo', 'simulate', 'proxy'];

test('no command: the usage on stderr, exit 2; --help: the usage on stdout, exit 0', async (t) => {
  const none = await runCli([]);
  t.is(none.code, 2);
  t.regex(none.stderr, /^usage: kube-balancer <command>/);
  const help = await runCli(['--help']);
  t.is(help.code, 0);
  for (const command of COMMANDS) t.regex(help.stdout, new RegExp(`^  ${command} `, 'm'));
  t.regex(help.stdout, /Exit codes: 0 success, 1 failure/);
});

test('an unknown command is one line on stderr, exit 2', async (t) => {
  const result = await runCli(['frobnicate']);
  t.is(result.code, 2);
  t.is(result.stdout, '');
  t.is(result.stderr.trimEnd().split('\n').length, 1);
  t.regex(result.stderr, /^kube-balancer: unknown command "frobnicate" \(commands: resolve, watch, probe, demo, simulate, proxy/);
});

for (const command of COMMANDS) {
  test(`${command} --help prints its usage and options, exit 0`, async (t) => {
    const result = await runCli([command, '--help']);
    t.is(result.code, 0);
    t.regex(result.stdout, new RegExp(`^usage: kube-balancer ${command}`));
    t.regex(result.stdout, /-h, --help/);
    t.regex(result.stdout, /Exit codes:/);
    t.is(result.stderr, '');
  });

  test(`${command} with an unknown option: one line naming it, exit 2`, async (t) => {
    const result = await runCli([command, '--bogus']);
    t.is(result.code, 2);
    t.is(result.stderr, `kube-balancer ${command}: unknown option --bogus (see kube-balancer ${command} --help)\n`);
  });
}

test('demo flags out of range are usage errors', async (t) => {
  for (const [args, message] of [
    [['--servers', '1'], /--servers must be 2–9, got 1/],
    [['--servers', 'three'], /--servers must be a whole number/],
    [['--duration', '2s'], /--duration must be at least 5s/],
    [['--duration', 'soon'], /--duration must be a duration like 10, 10s, 500ms or 2m/],
    [['--chart', 'x.svg', '--no-chart'], /exclude each other/],
  ] as const) {
    const result = await runCli(['demo', ...args]);
    t.is(result.code, 2, args.join(' '));
    t.regex(result.stderr, message);
    t.is(result.stderr.trimEnd().split('\n').length, 1);
  }
});

test('a missing optional package is a one-line message saying what to install', async (t) => {
  const missing = Object.assign(new Error("Cannot find package 'ws' imported from /x/y.js"), { code: 'ERR_MODULE_NOT_FOUND' });
  const error = await t.throwsAsync(optional(() => Promise.reject(missing), ['@kubernetes/client-node', 'ws'], 'the demo'));
  t.is(error.message, 'the demo needs @kubernetes/client-node and ws: npm install @kubernetes/client-node ws');
  // Anything else passes through unchanged.
  const other = new Error('boom');
  t.is(await t.throwsAsync(optional(() => Promise.reject(other), ['ws'], 'x')), other);
});
