import test from 'ava';
import { nameProblem, searchCandidates } from '../../src/dns/names.ts';

test('label and length limits (RFC 1035 §2.3.4)', (t) => {
  t.is(nameProblem('_https._tcp.kubernetes-headless.default.svc.cluster.local.'), undefined);
  t.is(nameProblem(`${'a'.repeat(63)}.test`), undefined);
  t.regex(nameProblem(`${'a'.repeat(64)}.test`) ?? '', /label of 64/);
  t.is(nameProblem(`${'abcdefgh.'.repeat(28)}a`), undefined, '253 characters');
  t.regex(nameProblem(`${'abcdefgh.'.repeat(28)}ab`) ?? '', /254 characters/);
  t.regex(nameProblem('a..b') ?? '', /empty label/);
  t.regex(nameProblem('.') ?? '', /empty/);
  t.regex(nameProblem('bücher.test') ?? '', /characters other than/);
});

test('search candidates follow glibc: ndots decides whether the name goes first', (t) => {
  const search = ['default.svc.cluster.local', 'svc.cluster.local', 'cluster.local'];
  t.deepEqual(searchCandidates('kubernetes-headless.default.svc', search, 5), [
    'kubernetes-headless.default.svc.default.svc.cluster.local',
    'kubernetes-headless.default.svc.svc.cluster.local',
    'kubernetes-headless.default.svc.cluster.local',
    'kubernetes-headless.default.svc',
  ]);
  t.deepEqual(searchCandidates('a.b.c.d.e.f', search, 5)[0], 'a.b.c.d.e.f');
  t.deepEqual(searchCandidates('api.example.com.', search, 5), ['api.example.com']);
  t.deepEqual(searchCandidates('api', [], 1), ['api']);
  // The root in the list is the name as it is, at that place (glibc's root_on_list): not again at the end.
  t.deepEqual(searchCandidates('api', ['a.test', '.', 'b.test'], 1), ['api.a.test', 'api', 'api.b.test']);
});
