/**
 * Cuts a watch's event stream at event boundaries, so that it can end cleanly between two events
 * (a broken connection, a watch moved to another endpoint) and never hand the caller half of one.
 */
export interface WatchFramer {
  /**
   * Takes the next chunk of the stream; returns what may be passed on now: everything up to the
   * last complete event (with any bytes held from before), or `undefined` when no event completed.
   * The rest is held until a later chunk completes it.
   */
  push(chunk: Buffer): Buffer | undefined;
  /** The bytes held after the last boundary, taken out: passed on unchanged when the server itself ends the stream. */
  rest(): Buffer | undefined;
}
