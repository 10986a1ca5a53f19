import * as undici from 'undici';

/** A watch event as JSON; `Body` types the object's fields beyond its metadata. */
export type RawWatchEvent<Body = Record<string, unknown>> = {
  type: string;
  object: { metadata: { name?: string; resourceVersion: string; annotations?: Record<string, string> }; code?: number } & Body;
};

/** Opens a watch with a plain undici request and collects its events as parsed JSON lines, as they arrive. */
export async function rawWatch<Body = Record<string, unknown>>(url: string, dispatcher: undici.Dispatcher, headers: Record<string, string>) {
  const res = await undici.request(url, { dispatcher, headers });
  const events: RawWatchEvent<Body>[] = [];
  let ended = false;
  let broken = false;
  let buffer = '';
  res.body.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    const lines = buffer.split('\n');
    buffer = lines.pop()!;
    for (const line of lines) events.push(JSON.parse(line) as RawWatchEvent<Body>);
  });
  res.body.on('end', () => (ended = true));
  res.body.on('error', () => (ended = broken = true));
  return {
    res,
    events,
    ended: () => ended,
    /** It ended with an error (its connection broke), not at the end of a complete response. */
    broken: () => broken,
    close: () => res.body.destroy(),
    names: () => events.map((e) => `${e.type} ${e.object.metadata.name ?? ''}`),
  };
}
