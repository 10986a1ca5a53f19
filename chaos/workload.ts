// The mixed workload, the same list of calls for the balancer and for the one-connection baseline:
// point GETs, LISTs, discovery, creates/patches/deletes with unique names, and long watches, each
// named by a request id so that the simulator counts where it arrived and how often it was executed.
import * as undici from 'undici';
import { REQUEST_ID_HEADER } from '../fixtures/apiserver/ChaosHooks.ts';
import { seeded } from '../fleet/sim/random.ts';
import { PRECREATED, WORKLOAD_MS } from './schedule.ts';

export type OpKind = 'get' | 'list' | 'discovery' | 'create' | 'patch' | 'delete' | 'watch';

export interface Op {
  n: number;
  kind: OpKind;
  atMs: number;
  /** `pre-i` for GETs and patches; the create op `n` a delete removes. */
  ref: number;
}

/** What became of one call. Times in ms from the workload's start. */
export interface RequestRecord {
  id: string;
  client: 'balancer' | 'pool';
  op: OpKind;
  start: number;
  end: number;
  status?: number;
  error?: string;
  ok: boolean;
  /** The caller's own deadline fired. */
  deadline: boolean;
  /** What the client said of itself when the call failed (the balancer: its endpoints' states and refused retries). */
  context?: string;
}

/** The caller's deadline for one call (a watch: until the workload is over, then closed by the caller). */
const DEADLINE_MS = 8_000;
const MIX: [OpKind, number][] = [
  ['get', 0.35],
  ['list', 0.12],
  ['discovery', 0.1],
  ['create', 0.2],
  ['patch', 0.1],
  ['delete', 0.13],
];

/** The calls of schedule (`seed`, `index`): one every 40 ms on average, and two watches from the start. */
export function drawOps(seed: number, index: number): Op[] {
  const random = seeded(seed, index, 31);
  const ops: Op[] = [
    { n: 0, kind: 'watch', atMs: 0, ref: 0 },
    { n: 1, kind: 'watch', atMs: 0, ref: 0 },
  ];
  const creates: number[] = [];
  for (let at = 0; at < WORKLOAD_MS; at += random() * 80) {
    let x = random();
    const kind = MIX.find(([, p]) => (x -= p) < 0)?.[0] ?? 'get';
    const n = ops.length;
    if (kind === 'delete') {
      if (creates.length === 0) continue;
      ops.push({ n, kind, atMs: at, ref: creates.splice(Math.floor(random() * creates.length), 1)[0]! });
      continue;
    }
    if (kind === 'create') creates.push(n);
    ops.push({ n, kind, atMs: at, ref: Math.floor(random() * PRECREATED) });
  }
  return ops;
}

export interface Client {
  name: 'balancer' | 'pool';
  dispatcher: undici.Dispatcher;
  origin: string;
  headers: Record<string, string>;
  /** Read when a call fails, for the report of why it failed. */
  context?: () => string;
}

const DISCOVERY = ['/api', '/apis', '/version', '/api/v1'];
const CM = '/api/v1/namespaces/default/configmaps';

/** Runs `ops` through `client` from `t0` (performance clock); resolves with one record per call made. */
export async function runOps(client: Client, ops: readonly Op[], tag: string, t0: number): Promise<RequestRecord[]> {
  const records: RequestRecord[] = [];
  const created = new Map<number, Promise<boolean>>();
  const nameOf = (n: number): string => `${client.name[0]}-${tag}-${n}`;
  const now = (): number => performance.now() - t0;
  await Promise.all(
    ops.map(async (op) => {
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, op.atMs - now())));
      if (op.kind === 'delete' && !(await created.get(op.ref))) return;
      const call = one(client, op, nameOf, `${client.name}-${tag}-${op.n}`, now, records);
      if (op.kind === 'create') created.set(op.n, call);
      await call;
    }),
  );
  return records;
}

function request(op: Op, name: (n: number) => string): { method: string; path: string; body?: string; contentType?: string } {
  switch (op.kind) {
    case 'get':
      return { method: 'GET', path: `${CM}/pre-${op.ref}` };
    case 'list':
      return { method: 'GET', path: `${CM}?limit=500` };
    case 'discovery':
      return { method: 'GET', path: DISCOVERY[op.n % DISCOVERY.length]! };
    case 'create':
      return { method: 'POST', path: CM, body: JSON.stringify({ metadata: { name: name(op.n) }, data: { n: String(op.n) } }), contentType: 'application/json' };
    case 'patch':
      return { method: 'PATCH', path: `${CM}/pre-${op.ref}`, body: JSON.stringify({ data: { [`n${op.n}`]: 'x' } }), contentType: 'application/merge-patch+json' };
    case 'delete':
      return { method: 'DELETE', path: `${CM}/${name(op.ref)}` };
    case 'watch':
      return { method: 'GET', path: `${CM}?watch=1&allowWatchBookmarks=true` };
  }
}

/** One call; true when it succeeded. */
async function one(client: Client, op: Op, name: (n: number) => string, id: string, now: () => number, records: RequestRecord[]): Promise<boolean> {
  const { method, path, body, contentType } = request(op, name);
  const start = now();
  const watch = op.kind === 'watch';
  // Our own timers, cleared at the end, so that nothing of the workload is left for the leak check.
  const deadline = new AbortController();
  const planned = new AbortController();
  const timer = watch ? undefined : setTimeout(() => deadline.abort(), DEADLINE_MS);
  const signal = watch ? planned.signal : deadline.signal;
  const headers = { ...client.headers, [REQUEST_ID_HEADER]: id, ...(contentType ? { 'content-type': contentType } : {}) };
  const record: RequestRecord = { id, client: client.name, op: op.kind, start, end: start, ok: false, deadline: false };
  const stop = watch ? setTimeout(() => planned.abort(), Math.max(0, WORKLOAD_MS + 500 - now())) : undefined;
  try {
    const res = await undici.request(`${client.origin}${path}`, { dispatcher: client.dispatcher, method, headers, body, signal });
    record.status = res.statusCode;
    await res.body.text();
    record.ok = res.statusCode < 400 && !watch;
    if (watch) record.error = 'watch ended early';
  } catch (err) {
    if (watch && planned.signal.aborted) {
      record.ok = record.status === 200;
      if (!record.ok) record.error = record.status === undefined ? 'watch never started' : `watch status ${record.status}`;
    } else {
      record.deadline = deadline.signal.aborted;
      record.error = record.deadline ? 'caller deadline' : errorName(err);
    }
  } finally {
    clearTimeout(stop);
    clearTimeout(timer);
  }
  record.end = now();
  if (!record.ok && client.context) record.context = client.context();
  records.push(record);
  return record.ok;
}

function errorName(err: unknown): string {
  const e = err as { code?: string; name?: string; message?: string };
  return `${e.code ?? e.name ?? 'Error'}: ${(e.message ?? '').slice(0, 80)}`;
}
