import { endpointKey } from '../net/endpointKey.ts';
import { duration, EXIT, interrupted, parse, positiveInteger } from './args.ts';
import type { Command } from './command.ts';
import { DNS_SERVER_HELP, oneTarget, openResolver, sortRows, TARGETS_HELP, toRow, type EndpointRow } from './endpoints.ts';

export const watch: Command = {
  help: `usage: kube-balancer watch <target> [--dns-server ADDR]... [--count N] [--duration TIME] [--json]

Follows a target as the balancer does (DNS answers refreshed on their TTL) and prints every change of
the endpoint set: + added, - removed, ~ changed priority or weight. Runs until Ctrl-C, or --count or
--duration for scripts. DNS failures are printed and change nothing: the last set stays in use.

options:
${DNS_SERVER_HELP}
  --count N          stop after N endpoint sets (the first one counts)
  --duration TIME    stop after TIME: 30, 30s, 500ms, 2m
  --json             one JSON object per line: {"time", "type": "endpoints", "endpoints", "added",
                     "removed", "changed"}, {"time", "type": "error" | "warning", "message"}
  -h, --help         this help

${TARGETS_HELP}

Exit codes: 0 stopped after at least one endpoint set, 1 none was ever resolved, 2 usage error.`,

  async run(args) {
    const { values, positionals } = parse(
      args,
      { 'dns-server': { type: 'string', multiple: true }, count: { type: 'string' }, duration: { type: 'string' }, json: { type: 'boolean' } },
      true,
    );
    const target = oneTarget(positionals);
    const count = values.count === undefined ? Infinity : positiveInteger('--count', values.count);
    const ms = values.duration === undefined ? undefined : duration('--duration', values.duration);
    const resolver = openResolver(target, values['dns-server']);
    const print = values.json ? jsonPrinter() : textPrinter(target);

    let sets = 0;
    let previous = new Map<string, EndpointRow>();
    const signal = interrupted();
    let stop!: () => void;
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    const timer = ms === undefined ? undefined : setTimeout(stop, ms);
    resolver.start({
      endpoints: (set) => {
        if (sets >= count) return;
        const rows = sortRows(set.map(toRow));
        const current = new Map(rows.map((r) => [endpointKey(r), r]));
        print.endpoints(rows, diff(previous, current));
        previous = current;
        if (++sets >= count) stop();
      },
      error: (error) => print.problem('error', error.message),
      warning: (message) => print.problem('warning', message),
    });
    // The resolver's timers do not keep a process alive (a library must not); a watch must.
    const keepAlive = setInterval(() => {}, 1 << 30);
    await Promise.race([stopped, signal.promise]);
    clearInterval(keepAlive);
    signal.dispose();
    clearTimeout(timer);
    await resolver.close?.();
    if (sets === 0) throw new Error(`${target} resolved to no endpoint while watched`);
    return EXIT.ok;
  },
};

interface Changes {
  added: EndpointRow[];
  removed: EndpointRow[];
  changed: Array<{ before: EndpointRow; after: EndpointRow }>;
}

function diff(before: Map<string, EndpointRow>, after: Map<string, EndpointRow>): Changes {
  const changes: Changes = { added: [], removed: [], changed: [] };
  for (const [key, row] of after) {
    const old = before.get(key);
    if (!old) changes.added.push(row);
    else if (old.priority !== row.priority || old.weight !== row.weight) changes.changed.push({ before: old, after: row });
  }
  for (const [key, row] of before) if (!after.has(key)) changes.removed.push(row);
  return changes;
}

interface Printer {
  endpoints(rows: EndpointRow[], changes: Changes): void;
  problem(type: 'error' | 'warning', message: string): void;
}

function jsonPrinter(): Printer {
  const line = (object: object): void => console.log(JSON.stringify({ time: new Date().toISOString(), ...object }));
  return {
    endpoints: (rows, c) =>
      line({ type: 'endpoints', endpoints: rows, added: c.added.map(endpointKey), removed: c.removed.map(endpointKey), changed: c.changed.map((x) => endpointKey(x.after)) }),
    problem: (type, message) => line({ type, message }),
  };
}

function textPrinter(target: string): Printer {
  const time = (): string => new Date().toISOString().slice(11, 23);
  const describe = (r: EndpointRow): string => `priority ${r.priority}  weight ${r.weight}${r.ttl === null ? '' : `  ttl ${r.ttl}s`}${r.source ? `  ${r.source}` : ''}`;
  let first = true;
  return {
    endpoints(rows, c) {
      console.log(`${time()}  ${target}: ${rows.length} endpoint${rows.length === 1 ? '' : 's'}${first ? '' : ' (changed)'}`);
      first = false;
      for (const r of c.added) console.log(`  + ${endpointKey(r)}  ${describe(r)}`);
      for (const r of c.removed) console.log(`  - ${endpointKey(r)}`);
      for (const { before, after } of c.changed) {
        const what = [
          before.priority !== after.priority ? `priority ${before.priority} → ${after.priority}` : '',
          before.weight !== after.weight ? `weight ${before.weight} → ${after.weight}` : '',
        ];
        console.log(`  ~ ${endpointKey(after)}  ${what.filter(Boolean).join('  ')}`);
      }
    },
    problem: (type, message) => console.error(`${time()}  ${type}: ${message}`),
  };
}
