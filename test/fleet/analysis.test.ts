import test from 'ava';
import { maxMin, requestRates, settleSeconds, type Series } from '../../fleet/sim/analysis.ts';

/** Three ready apiservers, `rows[s]` their requests in second s. */
function series(rows: number[][]): Series {
  const servers = 3;
  return {
    seconds: rows.length,
    servers,
    requests: Float64Array.from(rows.flat()),
    watches: new Float64Array(rows.length * servers),
    ready: new Uint8Array(rows.length * servers).fill(1),
    dns: new Float64Array(rows.length),
  };
}

test('a one-second blip crosses 1.1 in a 5-s mean but not in a 10-s one, and the settle time follows the window', (t) => {
  // Even at 100 a second for 30 s, except second 20, where one apiserver gets 170 (a chance burst).
  const rows = Array.from({ length: 30 }, (_, s) => (s === 20 ? [170, 100, 100] : [100, 100, 100]));
  const meter = series(rows);
  const narrow = maxMin(requestRates(meter), meter);
  const wide = maxMin(requestRates(meter, 10), meter);
  t.true(narrow[20]! > 1.1, `5-s mean: ${narrow[20]}`);
  t.true(wide[20]! <= 1.1, `10-s mean: ${wide[20]}`);
  t.is(settleSeconds(narrow, 5, 1.1), 20);
  t.is(settleSeconds(wide, 5, 1.1), 0);
});

test('a lasting skew stays visible in the 10-s mean', (t) => {
  const rows = Array.from({ length: 40 }, (_, s) => (s >= 10 && s < 30 ? [130, 100, 100] : [100, 100, 100]));
  const meter = series(rows);
  const wide = maxMin(requestRates(meter, 10), meter);
  t.true(wide[29]! > 1.1);
  // The skew ends at 30; in second 35 the 10-s mean still holds 4 of its seconds (1.12), in 36 three (1.09).
  t.is(settleSeconds(wide, 5, 1.1), 36 - 5);
});
