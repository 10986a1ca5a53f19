// The watch framers, byte by byte: whatever the chunking, only whole events come out, and what is
// held is exactly the rest.
import test from 'ava';
import fc from 'fast-check';
import { encodeObject, watchFrame } from '../../../fixtures/apiserver/protobuf.ts';
import { framerFor } from '../../../src/dispatcher/framing/framerFor.ts';
import type { WatchFramer } from '../../../src/dispatcher/framing/WatchFramer.ts';
import { LengthPrefixFramer } from '../../../src/dispatcher/framing/LengthPrefixFramer.ts';
import { LineFramer } from '../../../src/dispatcher/framing/LineFramer.ts';

const configMap = (name: string, rv: number) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default', resourceVersion: String(rv) }, data: { line: 'a\nb\n' } });

/** Feeds `stream` cut at `cuts`; returns what came out and the bytes held at the end. */
function feed(framer: WatchFramer, stream: Buffer, cuts: number[]): { out: Buffer; outputs: Buffer[]; rest: Buffer } {
  const outputs: Buffer[] = [];
  let from = 0;
  for (const cut of [...cuts.sort((a, b) => a - b), stream.length]) {
    // A fresh copy per chunk, overwritten afterwards: the framer must not keep views of it.
    const chunk = Buffer.from(stream.subarray(from, cut));
    const out = framer.push(chunk);
    if (out) outputs.push(Buffer.from(out));
    chunk.fill(0xee);
    from = cut;
  }
  return { out: Buffer.concat(outputs), outputs, rest: framer.rest() ?? Buffer.alloc(0) };
}

test('framerFor: JSON (and no type) by lines, protobuf by length, anything else passed through', (t) => {
  t.true(framerFor('application/json') instanceof LineFramer);
  t.true(framerFor('application/json;charset=utf-8') instanceof LineFramer);
  t.true(framerFor('application/apply-patch+json') instanceof LineFramer);
  t.true(framerFor(undefined) instanceof LineFramer);
  t.true(framerFor('application/vnd.kubernetes.protobuf;stream=watch') instanceof LengthPrefixFramer);
  t.true(framerFor(['Application/Vnd.Kubernetes.Protobuf; stream=watch']) instanceof LengthPrefixFramer);
  t.is(framerFor('application/cbor-seq'), undefined);
  t.is(framerFor('text/plain'), undefined);
});

test('protobuf frames: every 0x0A inside a frame is an ordinary byte; output ends at frame boundaries only, whatever the chunking', (t) => {
  const frames = [watchFrame('ADDED', configMap('a', 1)), watchFrame('MODIFIED', configMap('b', 2)), Buffer.from([0, 0, 0, 0]), watchFrame('DELETED', configMap('c', 3))];
  const ends = frames.reduce<number[]>((acc, f) => [...acc, (acc.at(-1) ?? 0) + f.length], []);
  const stream = Buffer.concat(frames);
  t.true(stream.includes(0x0a), 'the frames hold newlines (the WatchEvent type tag is one)');
  fc.assert(
    fc.property(fc.uniqueArray(fc.integer({ min: 1, max: stream.length - 1 }), { maxLength: 12 }), fc.integer({ min: 0, max: stream.length }), (cuts, stop) => {
      const partial = stream.subarray(0, stop);
      const { out, outputs, rest } = feed(new LengthPrefixFramer(), partial, cuts.filter((c) => c < stop));
      const boundary = Math.max(0, ...ends.filter((e) => e <= stop));
      let at = 0;
      for (const o of outputs) {
        at += o.length;
        if (!ends.includes(at)) return false;
      }
      return out.equals(stream.subarray(0, boundary)) && rest.equals(partial.subarray(boundary));
    }),
  );
  t.pass();
});

test('a complete protobuf frame comes out as soon as its last byte arrives', (t) => {
  const framer = new LengthPrefixFramer();
  const frame = watchFrame('ADDED', configMap('a', 1));
  t.is(framer.push(frame.subarray(0, 3)), undefined);
  t.is(framer.push(frame.subarray(3, frame.length - 1)), undefined);
  t.deepEqual(framer.push(frame.subarray(frame.length - 1)), frame);
  t.is(framer.rest(), undefined);
  t.true(encodeObject(configMap('a', 1)).subarray(0, 4).equals(Buffer.from('k8s\0', 'latin1')));
});

test('JSON lines: output ends at newlines only; the rest is held', (t) => {
  const stream = Buffer.from('{"type":"ADDED"}\n{"type":"MODIFIED"}\n{"type":"DEL');
  fc.assert(
    fc.property(fc.uniqueArray(fc.integer({ min: 1, max: stream.length - 1 }), { maxLength: 8 }), (cuts) => {
      const { out, rest } = feed(new LineFramer(), stream, cuts);
      const cut = stream.lastIndexOf(10) + 1;
      return out.equals(stream.subarray(0, cut)) && rest.equals(stream.subarray(cut));
    }),
  );
  t.pass();
});
