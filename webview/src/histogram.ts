// A histogram as a small SVG bar chart for the hover: one bar per bin, the range's ends
// under it, both as wide as the card. Built with DOM calls; the numbers are set as text.
import type { Histogram } from "./format";
import { formatRange } from "./units";

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 176;
const HEIGHT = 40;
const GAP = 1;

export function histogramChart(h: Histogram): HTMLElement {
  const box = document.createElement("div");
  box.className = "ts-hist";
  box.dataset.role = "histogram";
  const svg = document.createElementNS(SVG, "svg");
  // As wide as the card, so the bars span what the range's ends are written under.
  svg.setAttribute("width", "100%");
  svg.setAttribute("height", String(HEIGHT));
  svg.setAttribute("viewBox", `0 0 ${WIDTH} ${HEIGHT}`);
  svg.setAttribute("preserveAspectRatio", "none");
  const n = h.counts.length;
  const top = Math.max(1, ...h.counts);
  const w = WIDTH / n;
  h.counts.forEach((c, i) => {
    const bar = document.createElementNS(SVG, "rect");
    // a bin with any value at all stays visible next to a tall one
    const height = c > 0 ? Math.max(1.5, (c / top) * HEIGHT) : 0;
    bar.setAttribute("x", (i * w + GAP / 2).toFixed(2));
    bar.setAttribute("y", (HEIGHT - height).toFixed(2));
    bar.setAttribute("width", Math.max(0.5, w - GAP).toFixed(2));
    bar.setAttribute("height", height.toFixed(2));
    bar.setAttribute("class", "ts-hist-bar");
    bar.dataset.count = String(c);
    svg.appendChild(bar);
  });
  box.appendChild(svg);
  const ends = document.createElement("div");
  ends.className = "ts-hist-ends";
  const lo = document.createElement("span");
  const [loText, hiText] = formatRange(h.lo, h.hi);
  lo.textContent = loText;
  const hi = document.createElement("span");
  hi.textContent = hiText;
  ends.append(lo, hi);
  box.appendChild(ends);
  return box;
}
