import test from 'ava';
import { isPointRead } from '../../../src/balancer/load/isPointRead.ts';

test('GETs of one named object are point reads', (t) => {
  for (const path of [
    '/api/v1/namespaces/default/configmaps/bench',
    '/api/v1/namespaces/default/pods/web-0?resourceVersion=0',
    '/api/v1/nodes/node-1',
    '/api/v1/namespaces/kube-system',
    '/apis/apps/v1/namespaces/default/deployments/web',
    '/apis/rbac.authorization.k8s.io/v1/clusterroles/admin',
    '/api/v1/namespaces/default/pods/web-0/',
  ]) {
    t.true(isPointRead('GET', path), path);
  }
  t.true(isPointRead('HEAD', '/api/v1/nodes/node-1'));
});

test('lists, writes, subresources and non-resource paths are not', (t) => {
  for (const path of [
    '/api/v1/pods',
    '/api/v1/namespaces/default/pods',
    '/api/v1/namespaces/default/pods?labelSelector=app%3Dweb',
    '/apis/apps/v1/deployments',
    '/apis/apps/v1/namespaces/default/deployments',
    '/api/v1/namespaces/default/pods/web-0/log',
    '/api/v1/nodes/node-1/proxy/metrics',
    '/api/v1/watch/namespaces/default/pods/web-0',
    '/api',
    '/api/v1',
    '/apis/apps/v1',
    '/openapi/v2',
    '/version',
    '/readyz',
    '/api/v1/namespaces//pods/x',
  ]) {
    t.false(isPointRead('GET', path), path);
  }
  for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) t.false(isPointRead(method, '/api/v1/namespaces/default/configmaps/bench'), method);
});
