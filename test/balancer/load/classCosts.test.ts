// Which classes of GETs are copied to measure a lagging endpoint (`ClassCosts.copies`, issue 27):
// those whose answers are learnt from, and light; a heavy LIST is never sent twice to measure.
import test from 'ava';
import { ClassCosts } from '../../../src/balancer/load/ClassCosts.ts';

test('a class is copied once warm (32 answers), and only while its answers take under a second on average', (t) => {
  const costs = new ClassCosts();
  const LIST = 'GET /api/v1/namespaces/*/pods';
  const ALL = 'GET /api/v1/pods';
  t.false(costs.copies(LIST), 'unknown');
  for (let i = 0; i < 31; i++) costs.rescale(LIST, 20, false);
  t.false(costs.copies(LIST), 'cold: its answers are not learnt from yet');
  costs.rescale(LIST, 20, false);
  t.true(costs.copies(LIST), 'warm and light');
  for (let i = 0; i < 32; i++) costs.rescale(ALL, 1_500, false);
  t.false(costs.copies(ALL), 'a heavy LIST (1.5 s)');
  for (let i = 0; i < 200; i++) costs.rescale(LIST, 1_200, false);
  t.false(costs.copies(LIST), 'a light class that turned heavy');
});
