import test from 'ava';
import { classify, queryBool, type RequestKind } from '../../src/balancer/longRunning.ts';

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
  ];
  for (const [method, path, upgrade, query, kind] of cases) t.is(classify(method, path, upgrade, query), kind, `${method} ${path} ${JSON.stringify(query)}`);
});

test('query booleans as apimachinery reads them: only absent, "0" and "false" in any case are false', (t) => {
  for (const value of ['true', 'True', 'TRUE', 't', 'T', '1', 'yes', 'y', 'on', '', 'f', 'F', 'no', '2']) t.true(queryBool([value]), JSON.stringify(value));
  for (const value of ['false', 'False', 'FALSE', 'fAlSe', '0']) t.false(queryBool([value]), JSON.stringify(value));
  t.false(queryBool([]));
  t.false(queryBool(['false', 'true']), 'the first value decides');
  t.true(queryBool(['true', 'false']));
});

test('watch and follow parameters the apiserver takes for true are watches and followed logs (issue 12, item 10)', (t) => {
  const cases: Array<[string, string, Record<string, unknown> | undefined, RequestKind]> = [
    ['GET', '/api/v1/pods?watch=True', undefined, 'watch'],
    ['GET', '/api/v1/pods?watch=t', undefined, 'watch'],
    ['GET', '/api/v1/pods?watch=yes', undefined, 'watch'],
    ['GET', '/api/v1/pods?watch', undefined, 'watch'],
    ['GET', '/api/v1/pods?watch=', undefined, 'watch'],
    ['GET', '/api/v1/pods?resourceVersion=5&watch&allowWatchBookmarks=true', undefined, 'watch'],
    ['GET', '/apis/apps/v1/namespaces/a/deployments?watch=TRUE', undefined, 'watch'],
    ['GET', '/api/v1/namespaces?watch=1', undefined, 'watch'],
    ['HEAD', '/api/v1/pods?watch=true', undefined, 'long-running'],
    ['GET', '/api/v1/pods?watch=False', undefined, 'short'],
    ['GET', '/api/v1/pods?watch=0&watch=1', undefined, 'short'],
    ['GET', '/api/v1/namespaces/a/pods/p/log?follow=True', undefined, 'long-running'],
    ['GET', '/api/v1/namespaces/a/pods/p/log?follow', undefined, 'long-running'],
    ['GET', '/api/v1/namespaces/a/pods/p/log?follow=FALSE', undefined, 'short'],
    // undici's `query` option goes out through querystring.stringify: `undefined` is sent as `watch=`.
    ['GET', '/api/v1/pods', { watch: 'True' }, 'watch'],
    ['GET', '/api/v1/pods', { watch: undefined }, 'watch'],
    ['GET', '/api/v1/pods', { watch: false }, 'short'],
    ['GET', '/api/v1/pods', { watch: 0 }, 'short'],
    ['GET', '/api/v1/pods', { watch: [] }, 'short'],
    ['GET', '/api/v1/namespaces/a/pods/p/log', { follow: 'yes' }, 'long-running'],
  ];
  for (const [method, path, query, kind] of cases) t.is(classify(method, path, undefined, query), kind, `${method} ${path} ${JSON.stringify(query)}`);
});

test('only what the apiserver makes a watch is one: a named object, a write, a non-resource path, a namespace called "watch"', (t) => {
  const cases: Array<[string, string, RequestKind]> = [
    // `watch=true` on a named object is a get (NewRequestInfo reads it only without a name).
    ['GET', '/api/v1/namespaces/a/pods/p?watch=true', 'short'],
    ['GET', '/api/v1/namespaces/a?watch=true', 'short'],
    ['GET', '/api/v1/namespaces/a/status?watch=true', 'short'],
    ['POST', '/api/v1/namespaces/a/pods?watch=true', 'short'],
    ['GET', '/version?watch=true', 'short'],
    ['GET', '/apis/apps/v1?watch=true', 'short'],
    ['GET', '/api/v1/namespaces/watch/pods', 'short'],
    ['GET', '/apis/watch/v1/things', 'short'],
    ['GET', '/watch/', 'short'],
    // The `/watch/` prefix right after the version is a watch whatever follows, a name included.
    ['GET', '/api/v1/watch/namespaces/a/pods/p', 'watch'],
    ['GET', '/apis/apps/v1/watch/deployments', 'watch'],
    ['GET', '/api/v1/pods/?watch=1', 'watch'],
  ];
  for (const [method, path, kind] of cases) t.is(classify(method, path, undefined, undefined), kind, `${method} ${path}`);
});
