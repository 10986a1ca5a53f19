import type { Dispatcher } from 'undici';

type Body = Dispatcher.DispatchOptions['body'];

/** Bodies undici can send again as they are. */
export function isReplayable(body: Body): boolean {
  return (
    body === undefined ||
    body === null ||
    typeof body === 'string' ||
    body instanceof Uint8Array ||
    (typeof Blob !== 'undefined' && (body as unknown) instanceof Blob)
  );
}

/**
 * Reads a one-shot body (a stream or async iterable — what `fetch` always sends) into memory, up to
 * `limit` bytes, so it can be sent again to another apiserver after a 429 or a refused connection.
 * Kubernetes request bodies are small JSON. A larger body is passed on as it streams, with its
 * first chunks put back in front, and is not replayable.
 */
export async function bufferBody(body: Body, limit: number): Promise<{ body: Body; replayable: boolean }> {
  // Replayable bodies (strings, bytes, Blobs) are never async iterables: they return here as they are.
  if (!isAsyncIterable(body)) return { body, replayable: isReplayable(body) };
  const iterator = body[Symbol.asyncIterator]() as AsyncIterator<unknown>;
  const chunks: Buffer[] = [];
  let size = 0;
  for (;;) {
    const step: IteratorResult<unknown> = await iterator.next();
    if (step.done) return { body: Buffer.concat(chunks, size), replayable: true };
    const chunk = toBuffer(step.value);
    chunks.push(chunk);
    size += chunk.length;
    if (size > limit) return { body: resumed(chunks, iterator) as unknown as Body, replayable: false };
  }
}

function isAsyncIterable(body: Body): body is Body & AsyncIterable<unknown> {
  return typeof (body as AsyncIterable<unknown> | null)?.[Symbol.asyncIterator] === 'function';
}

function toBuffer(value: unknown): Buffer {
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  return Buffer.from(String(value));
}

async function* resumed(head: Buffer[], rest: AsyncIterator<unknown>): AsyncGenerator<Buffer> {
  yield* head;
  for (;;) {
    const step: IteratorResult<unknown> = await rest.next();
    if (step.done) return;
    yield toBuffer(step.value);
  }
}
