import { parseArgs, type ParseArgsConfig } from 'node:util';
import { nearestKey } from '../options/knownKeys.ts';

/** The command line is wrong (unknown option, missing or malformed argument): exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** Exit codes, the same for every command (README, "CLI"). */
export const EXIT = { ok: 0, failure: 1, usage: 2, interrupted: 130 } as const;

/**
 * `util.parseArgs` in strict mode, with its errors turned into one-line `UsageError`s: its messages
 * run on with advice about `--` that only confuses here.
 */
export function parse<T extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: T, allowPositionals = false) {
  try {
    return parseArgs({ args, options, allowPositionals, strict: true });
  } catch (error) {
    const { code, message } = error as { code?: string; message: string };
    if (typeof code !== 'string' || !code.startsWith('ERR_PARSE_ARGS_')) throw error;
    const option = /'(-[^']*)'/.exec(message)?.[1];
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option) throw new UsageError(`unknown option ${option.split(/\s/)[0]}${didYouMean(option.split(/\s/)[0]!, options)}`);
    if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') throw new UsageError(`unexpected argument ${/'([^']*)'/.exec(message)?.[1] ?? ''}`.trim());
    if (message.includes('argument missing') && option) throw new UsageError(`${option.split(/\s/)[0]} needs a value`);
    const first = message.split('\n')[0]!.replace(/\.$/, '');
    throw new UsageError(first.charAt(0).toLowerCase() + first.slice(1));
  }
}

/** ` (did you mean --json?)` for a misspelt long flag (`--jsn`), else nothing. */
function didYouMean(flag: string, options: NonNullable<ParseArgsConfig['options']>): string {
  if (!flag.startsWith('--')) return '';
  const nearest = nearestKey(flag.slice(2).split('=')[0]!, Object.keys(options));
  return nearest === undefined ? '' : ` (did you mean --${nearest}?)`;
}

/** A whole number ≥ 1. */
export function positiveInteger(flag: string, value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n < 1) throw new UsageError(`${flag} must be a whole number of at least 1, got "${value}"`);
  return n;
}

/** Seconds as a number (`10`, `2.5`) or with a unit (`500ms`, `10s`, `2m`); returns milliseconds. */
export function duration(flag: string, value: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(value.trim());
  const ms = m ? Number(m[1]) * ({ ms: 1, s: 1000, m: 60_000 }[m[2] ?? 's'] ?? 1000) : NaN;
  if (!(ms > 0)) throw new UsageError(`${flag} must be a duration like 10, 10s, 500ms or 2m, got "${value}"`);
  return ms;
}

/** Resolves on the first SIGINT or SIGTERM (and stops listening), so a command can clean up before it exits. */
export function interrupted(): { promise: Promise<NodeJS.Signals>; dispose(): void } {
  let dispose = (): void => {};
  const promise = new Promise<NodeJS.Signals>((resolve) => {
    const on = (signal: NodeJS.Signals): void => {
      dispose();
      resolve(signal);
    };
    process.once('SIGINT', on);
    process.once('SIGTERM', on);
    dispose = () => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
    };
  });
  return { promise, dispose: () => dispose() };
}
