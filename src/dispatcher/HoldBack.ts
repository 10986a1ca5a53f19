/** Whether a response of this `Content-Length` (if it says) can be held within `limit` bytes. */
export function fitsHold(contentLength: string | string[] | undefined, limit: number): boolean {
  if (limit <= 0) return false;
  const value = Array.isArray(contentLength) ? contentLength[0] : contentLength;
  if (value === undefined) return true;
  const length = Number(value);
  return !(length > limit);
}
