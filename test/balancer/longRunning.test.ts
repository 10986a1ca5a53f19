import test from 'ava';
import { classify, type RequestKind } from '../../src/balancer/longRunning.ts';

test('watches, followed logs and upgrades are long-running; GET watches are watches', (t) => {
  const cases: Array<[string, string, unknown, Record<string, unknown> | undefined, RequestKind]> = [
    ['GET', '/api/v1/pods', undefined, undefined, 'short'],
    ['GET', '/api/v1/pods?limit=500', undefined, undefined, 'short'],
    ['GET', '/api/v1/pods?watch=true&resourceVersion=1', undefined, undefined, 'watch'],
    ['GET', '/api/v1/pods?resourceVersion=1&watch=1', undefined, undefined, 'watch'],
    ['GET', '/api/v1/pods?watch=false', undefined, undefined, 'short'],
    ['GET', '/api/v1/watch/pods', undefined, undefined, 'watch'],
    ['GET', '/api/v1/pods?fieldSelector=/watch/', undefined, undefined, 'short'],
    ['GET', '/api/v1/pods', undefined, { watch: true }, 'watch'],
    ['get', '/api/v1/pods', undefined, { watch: 'true' }, 'watch'],
    ['POST', '/api/v1/watch/pods', undefined, undefined, 'long-running'],
    ['GET', '/api/v1/namespaces/a/pods/p/log?follow=true', undefined, undefined, 'long-running'],
    ['GET', '/api/v1/namespaces/a/pods/p/log', undefined, { follow: 1 }, 'long-running'],
    ['GET', '/api/v1/namespaces/a/pods/p/exec?command=sh', 'websocket', undefined, 'long-running'],
    ['GET', '/api/v1/namespaces/a/pods/p/exec', false, undefined, 'short'],
    ['GET', '/watch/', undefined, undefined, 'watch'],
  ];
  for (const [method, path, upgrade, query, kind] of cases) t.is(classify(method, path, upgrade, query), kind, `${method} ${path} ${JSON.stringify(query)}`);
});
