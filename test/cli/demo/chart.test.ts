import test from 'ava';
import { chartSvg } from '../../../src/cli/demo/chart.ts';
import { scenario } from '../../../src/cli/demo/scenario.ts';
import { findAll, parseXml } from '../../helpers/xml.ts';

const input = {
  title: 'requests/s <per> apiserver & "client"',
  durationMs: 10_000,
  stepMs: 1000,
  apiservers: ['apiserver-1', 'apiserver-2'],
  panels: [
    { label: 'kube-balancer', series: [[10, 12, 0, 5, 10, 10, 10, 10, 10, 10], [10, 8, 20, 15, 10, 10, 10, 10, 10, 10]] },
    {
      label: "one <connection> & 'more'",
      note: '17 failed calls; after the restarts 0% / 100%, max/min ∞',
      series: [[20, 20, 20, 20, 20, 20, 20, 20, 20, 20], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]],
      // Two in one pixel column, one outside the run.
      failuresAtMs: [2100, 2101, 5000, 12_000],
    },
  ],
  phases: [
    { title: 'all up', atMs: 0 },
    { title: 'crash apiserver-2 <now>', atMs: 2000, disrupts: 'apiserver-2' },
    { title: 'back', atMs: 4000 },
  ],
};

test('well-formed SVG: one panel per client, one series per apiserver, text escaped', (t) => {
  const svg = chartSvg(input);
  const root = parseXml(svg);
  t.is(root.name, 'svg');
  t.is(findAll(root, 'title')[0]!.text, 'requests/s &lt;per&gt; apiserver &amp; &quot;client&quot;');
  const panels = findAll(root, 'g');
  t.is(panels.length, 2);
  t.is(panels[1]!.attributes['data-client'], 'one &lt;connection&gt; &amp; &apos;more&apos;');
  for (const panel of panels) t.deepEqual(findAll(panel, 'polyline').map((p) => p.attributes['data-apiserver']), ['apiserver-1', 'apiserver-2']);
  // The disrupted stretch is shaded in each panel: from the crash to the next phase.
  const shaded = findAll(root, 'rect').filter((r) => r.attributes.fill === '#f4e3e3');
  t.is(shaded.length, 2);
});

test('points: x in time order inside the plot, y higher for more requests/s, one scale for both panels', (t) => {
  const root = parseXml(chartSvg(input));
  const lines = findAll(root, 'polyline').map((p) => p.attributes.points!.split(' ').map((xy) => xy.split(',').map(Number) as [number, number]));
  for (const points of lines) {
    t.is(points.length, 10);
    for (let i = 1; i < points.length; i++) t.true(points[i]![0] > points[i - 1]![0]);
  }
  const [kb1, , one1, one2] = lines;
  // 20 req/s is drawn above 10 req/s, and 0 at the bottom, in both panels alike.
  t.true(one1![0]![1] - one2![0]![1] < 0);
  const height = (points: [number, number][], i: number, base: number): number => base - points[i]![1];
  t.is(Math.round(height(one1!, 0, one2![0]![1])), Math.round(2 * height(kb1!, 0, kb1![2]![1])));
});

test('failed calls: red ticks on the time axis of their panel only, one per pixel column; the note under the label', (t) => {
  const root = parseXml(chartSvg(input));
  const [balanced, single] = findAll(root, 'g');
  t.deepEqual(findAll(balanced!, 'line').filter((l) => l.attributes.class === 'failure'), []);
  const ticks = findAll(single!, 'line').filter((l) => l.attributes.class === 'failure');
  t.is(ticks.length, 2);
  const xs = ticks.map((l) => Number(l.attributes.x1));
  t.true(xs[0]! < xs[1]!, 'in time order, 2.1 s before 5 s');
  t.deepEqual(findAll(single!, 'text').filter((n) => n.attributes.class === 'note').map((n) => n.text), ['17 failed calls; after the restarts 0% / 100%, max/min ∞']);
  t.true(findAll(single!, 'text').some((n) => n.text === 'failed call'), 'a legend entry for the ticks');
});

/** The labels' boxes: 7 px a character, wider than 12-px Arial or DejaVu Sans draws (5.5–6.5 on average). */
function labelBoxes(svg: string, titles: readonly string[]): { x: number; y: number; end: number; text: string }[] {
  const escaped = new Set(titles.map((title) => title.replaceAll("'", '&apos;')));
  return findAll(parseXml(svg), 'text')
    .filter((n) => escaped.has(n.text))
    .map((n) => ({ x: Number(n.attributes.x), y: Number(n.attributes.y), end: Number(n.attributes.x) + 7 * n.text.length, text: n.text }));
}

test('phase labels never overlap, nor leave the chart, nor reach the first panel: the longest titles, nine apiservers', (t) => {
  for (const servers of [2, 3, 9]) {
    const apiservers = Array.from({ length: servers }, (_, i) => ({ name: `apiserver-${i + 1}` }));
    const phases = scenario(apiservers as never, [], {} as never, 60_000, () => undefined);
    // The titles as they read once run (the crash names the one connection's apiserver), the longest.
    phases.find((p) => p.title === 'crash')!.title = `crash apiserver-${servers} (the one connection's)`;
    phases.find((p) => p.title === 'crashed apiserver back')!.title = `apiserver-${servers} back`;
    const svg = chartSvg({ ...input, durationMs: 60_000, phases: phases.map((p) => ({ title: p.title, atMs: p.atMs, disrupts: p.disrupts })) });
    const boxes = labelBoxes(svg, phases.map((p) => p.title));
    t.is(boxes.length, phases.length);
    for (const [i, a] of boxes.entries()) {
      t.true(a.x >= 0 && a.end <= 960, `${a.text} inside the chart`);
      for (const b of boxes.slice(i + 1)) {
        if (a.y === b.y) t.true(a.end <= b.x || b.end <= a.x, `${servers} apiservers: "${a.text}" and "${b.text}" overlap`);
        else t.true(Math.abs(a.y - b.y) >= 14, 'rows a line apart');
      }
    }
    const panelTop = Math.min(...findAll(parseXml(svg), 'rect').filter((r) => r.attributes.fill === 'none').map((r) => Number(r.attributes.y)));
    const panelLabel = panelTop - 24;
    t.true(Math.max(...boxes.map((b) => b.y)) + 14 <= panelLabel, 'the first panel\'s label clears the last row');
  }
});
