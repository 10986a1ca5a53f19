import { EXIT, parse } from './args.ts';
import type { Command } from './command.ts';
import { DNS_SERVER_HELP, oneTarget, endpointTable, openResolver, resolveOnce, sortRows, TARGETS_HELP, toRow } from './endpoints.ts';

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
    const target = oneTarget(positionals);
    const answer = await resolveOnce(openResolver(target, values['dns-server']), target);
    // Partial failures (one SRV target without an address) are worth knowing even when others resolved.
    for (const warning of answer.warnings) console.error(`warning: ${warning}`);
    const rows = sortRows(answer.endpoints.map(toRow));
    if (values.json) console.log(JSON.stringify({ target, endpoints: rows }, null, 2));
    else console.log(`${target}: ${rows.length} endpoint${rows.length === 1 ? '' : 's'}\n${endpointTable(rows)}`);
    return EXIT.ok;
  },
};
