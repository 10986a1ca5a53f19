import test from 'ava';
import * as undici from 'undici';
import { classifyError } from '../../src/health/classifyError.ts';
import { retryAfterMs } from '../../src/health/retryAfter.ts';

const err = (code: string, message = 'x'): Error => Object.assign(new Error(message), { code });

test('errors are classified by what they say about the endpoint and the request', (t) => {
  t.is(classifyError(err('ECONNREFUSED')), 'connect');
  t.is(classifyError(err('UND_ERR_CONNECT_TIMEOUT')), 'connect');
  t.is(classifyError(err('ERR_TLS_CERT_ALTNAME_INVALID')), 'tls');
  t.is(classifyError(err('UNABLE_TO_VERIFY_LEAF_SIGNATURE')), 'tls');
  t.is(classifyError(err('DEPTH_ZERO_SELF_SIGNED_CERT')), 'tls');
  t.is(classifyError(err('ECONNRESET')), 'reset');
  t.is(classifyError(err('UND_ERR_SOCKET')), 'reset');
  t.is(classifyError(err('UND_ERR_INFO', 'HTTP/2: "GOAWAY" frame received with code 0')), 'refused');
  t.is(classifyError(err('UND_ERR_SOCKET', 'HTTP/2: "GOAWAY" frame received with code 2')), 'refused');
  t.is(classifyError(err('UND_ERR_HEADERS_TIMEOUT')), 'timeout');
  t.is(classifyError(err('UND_ERR_ABORTED')), 'aborted');
  t.is(classifyError(Object.assign(new Error('x'), { name: 'AbortError' })), 'aborted');
  t.is(classifyError(err('UND_ERR_INVALID_ARG')), 'other');
  t.is(classifyError(new Error('no code')), 'other');
  t.is(classifyError(undefined), 'other');
});

test('Retry-After in seconds or as a date, capped, garbage ignored', (t) => {
  t.is(retryAfterMs('5'), 5000);
  t.is(retryAfterMs(['1', '9']), 1000);
  t.is(retryAfterMs(' 0 '), 0);
  t.is(retryAfterMs(new Date(1_000_000 + 3000).toUTCString(), 1_000_000), 3000);
  t.is(retryAfterMs(new Date(0).toUTCString(), 1_000_000), 0);
  t.is(retryAfterMs('86400'), 60_000);
  t.is(retryAfterMs('soon'), undefined);
  t.is(retryAfterMs(''), undefined);
  t.is(retryAfterMs(undefined), undefined);
  t.is(retryAfterMs('-5'), undefined);
});

test('a response undici cannot parse (HTTPParserError, with or without an HPE_ code) is a broken connection: GETs go elsewhere, the endpoint is judged', (t) => {
  // The hostile-apiserver fuzz (test/dispatcher/httpFuzz.test.ts) found these reaching the caller as 'other': never retried, never counted.
  t.is(classifyError(new undici.errors.HTTPParserError('Response does not match the HTTP/1.1 protocol (Invalid status code)')), 'reset');
  t.is(classifyError(Object.assign(new undici.errors.HTTPParserError('Response does not match the HTTP/1.1 protocol (Expected HTTP/)'), { code: 'HPE_INVALID_CONSTANT' })), 'reset');
});

test('undici’s own AssertionError (its HTTP/1.1 client on a bare 101 answer) and a content-length mismatch are broken connections too', (t) => {
  // Found by the HTTP/1.1 fuzz; end to end in test/dispatcher/brokenAnswers.test.ts.
  t.is(classifyError(err('UND_ERR_RES_CONTENT_LENGTH_MISMATCH')), 'reset');
  t.is(classifyError(Object.assign(new Error('The expression evaluated to a falsy value'), { name: 'AssertionError', code: 'ERR_ASSERTION' })), 'reset');
});

test('an HTTP/2 stream the server reset or closed early (undici’s UND_ERR_INFO) is a broken request: a GET goes elsewhere', (t) => {
  // Found by the HTTP/2 fuzzing: 254 of 117,605 requests reached the caller as 'other' errors, never retried.
  for (const message of [
    'HTTP/2: stream closed before response headers',
    'HTTP/2: stream errored before response headers',
    'HTTP/2: stream closed before the response was complete',
    'HTTP/2: stream half-closed (remote)',
    'HTTP/2: "stream error" received - code 2',
  ]) {
    t.is(classifyError(err('UND_ERR_INFO', message)), 'reset', message);
  }
  t.is(classifyError(err('UND_ERR_INFO', 'kube-balancer: another attempt answered first')), 'other', 'our own hedge loser is no verdict');
});

test('a request whose HTTP/2 HEADERS frame could not be sent never reached the server: refused, so any method may go elsewhere', (t) => {
  // Found by the HTTP/2 fuzzing: these reached the caller at once as 'other' errors.
  t.is(classifyError(err('UND_ERR_INFO', 'HTTP/2: "frameError" received - type 1, code 2')), 'refused');
  t.is(classifyError(err('UND_ERR_INFO', 'HTTP/2: "frameError" received - type 0, code 2')), 'other', 'a DATA frame not sent: the request may have run');
});
