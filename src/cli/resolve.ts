import type { EndpointAddress, Resolver } from '../resolver/Resolver.ts';
import { EXIT, parse, UsageError } from './args.ts';
import type { Command } from './command.ts';
import { DNS_SERVER_HELP, endpointTable, openResolver, sortRows, TARGETS_HELP, toRow } from './endpoints.ts';

/** DNS gives up after 10 s on its own; this only guards against a resolver that never answers. */
const GIVE_UP_MS = 15_000;

export const resolve: Command = {
  help: `usage: kube-balancer resolve <target> [--dns-server ADDR]... [--json]

Resolves a target once, as the balancer would, and lists its endpoints.

options:
${DNS_SERVER_HELP}
  --json             print {"target", "endpoints": [{address, port, priority, weight, ttl, source}]}
  -h, --help         this help

${TARGETS_HELP}

Exit codes: 0 endpoints found, 1 resolution failed or found none, 2 usage error.`,

  async run(args) {
    const { values, positionals } = parse(args, { 'dns-server': { type: 'string', multiple: true }, json: { type: 'boolean' } }, true);
    if (positionals.length !== 1) throw new UsageError(positionals.length === 0 ? 'missing <target>' : `one target only, got ${positionals.length}`);
    const target = positionals[0]!;
    const resolver = openResolver(target, values['dns-server']);
    const answer = await firstAnswer(resolver).finally(() => resolver.close?.());
    for (const warning of answer.warnings) console.error(`warning: ${warning}`);
    if (!answer.endpoints || answer.endpoints.length === 0) {
      throw new Error(`${target} resolved to no endpoint${answer.errors.length ? `: ${answer.errors.map((e) => e.message).join('; ')}` : ''}`);
    }
    // Partial failures (one SRV target without an address) are worth knowing even when others resolved.
    for (const error of answer.errors) console.error(`warning: ${error.message}`);
    const rows = sortRows(answer.endpoints.map(toRow));
    if (values.json) console.log(JSON.stringify({ target, endpoints: rows }, null, 2));
    else console.log(`${target}: ${rows.length} endpoint${rows.length === 1 ? '' : 's'}\n${endpointTable(rows)}`);
    return EXIT.ok;
  },
};

interface Answer {
  endpoints: readonly EndpointAddress[] | undefined;
  errors: Error[];
  warnings: string[];
}

/**
 * The outcome of the first resolution round. A round reports its partial failures just before its
 * endpoints, in the same tick, so an error settles the answer only if no endpoints follow it.
 */
function firstAnswer(resolver: Resolver): Promise<Answer> {
  const answer: Answer = { endpoints: undefined, errors: [], warnings: [] };
  return new Promise((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`no answer within ${GIVE_UP_MS / 1000} s`)), GIVE_UP_MS);
    const finish = (): void => {
      clearTimeout(timer);
      done(answer);
    };
    try {
      resolver.start({
        endpoints: (set) => {
          answer.endpoints = set;
          finish();
        },
        error: (error) => {
          answer.errors.push(error);
          setImmediate(finish);
        },
        warning: (message) => answer.warnings.push(message),
      });
    } catch (error) {
      clearTimeout(timer);
      fail(error instanceof Error ? error : new Error(String(error)));
    }
  });
}
