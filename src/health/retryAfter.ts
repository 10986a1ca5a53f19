/**
 * Milliseconds a `Retry-After` header asks to wait (delta-seconds or an HTTP date), or `undefined`
 * when absent or unreadable. Capped so a broken server cannot park an endpoint forever.
 */
export function retryAfterMs(value: string | string[] | undefined, now = Date.now(), capMs = 60_000): number | undefined {
  const raw = (Array.isArray(value) ? value[0] : value)?.trim();
  if (raw === undefined || raw === '') return undefined;
  let ms: number;
  if (/^\d+$/.test(raw)) ms = Number(raw) * 1000;
  else if (/^[+-]?\d/.test(raw)) return undefined; // not delta-seconds, and no HTTP date starts with a digit
  else {
    const date = Date.parse(raw);
    if (Number.isNaN(date)) return undefined;
    ms = date - now;
  }
  return Math.min(Math.max(ms, 0), capMs);
}
