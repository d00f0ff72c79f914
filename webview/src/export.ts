// Export the current view (the whole laid-out graph, not just the window) as SVG or PNG.
// The file must stand alone: the page's graph style rules go in with every theme variable
// (var(--ts-*) set on the root) replaced by its current value, so the export looks like the
// screen in any theme; a box's own (--ts-heat, "Colour by") is set on the box, as on screen.
import { drawAll, paintHeat, type DrawInput } from "./draw";

const SVGNS = "http://www.w3.org/2000/svg";

/** The page's top-level style rules for the graph, with theme variables resolved. */
function graphCss(root: Element): string {
  const cs = getComputedStyle(root);
  const out: string[] = [];
  for (const sheet of Array.from(document.styleSheets)) {
    let rules: CSSRuleList;
    try {
      rules = sheet.cssRules;
    } catch {
      continue;
    }
    for (const r of Array.from(rules)) {
      if (!(r instanceof CSSStyleRule) || !r.selectorText.includes(".ts-")) continue;
      if (/ts-(root|toolbar|btn|banner|stage|status|minimap|busy|tooltip|tip-|fatal|search|depth|model|spacer|lod)/.test(r.selectorText)) continue;
      // A variable the root doesn't set is one each box sets for itself (--ts-heat): kept.
      out.push(r.cssText.replace(/var\((--ts-[\w-]+)[^)]*\)/g, (m, name: string) => cs.getPropertyValue(name).trim() || m));
    }
  }
  return out.join("\n");
}

/** `heat`: the overlay's colours by drawn key ("Colour by"), as the screen shows them. */
export function exportSvg(d: DrawInput, defs: SVGDefsElement, root: Element, background: string, heat: ReadonlyMap<string, number>): string {
  const pad = 16;
  const w = Math.ceil(d.layout.width + pad * 2);
  const h = Math.ceil(d.layout.height + pad * 2);
  const svg = document.createElementNS(SVGNS, "svg");
  svg.setAttribute("xmlns", SVGNS);
  svg.setAttribute("class", "ts-svg");
  svg.setAttribute("width", String(w));
  svg.setAttribute("height", String(h));
  svg.setAttribute("viewBox", `${-pad} ${-pad} ${w} ${h}`);
  const style = document.createElementNS(SVGNS, "style");
  style.textContent = graphCss(root);
  svg.appendChild(style);
  const bg = document.createElementNS(SVGNS, "rect");
  for (const [k, v] of Object.entries({ x: -pad, y: -pad, width: w, height: h, fill: background })) bg.setAttribute(k, String(v));
  svg.appendChild(bg);
  svg.appendChild(defs.cloneNode(true));
  const g = document.createElementNS(SVGNS, "g");
  svg.appendChild(g);
  drawAll(g, d);
  for (const box of Array.from(g.querySelectorAll<SVGGElement>(".ts-nodes > [data-key]"))) paintHeat(box, heat.get(box.dataset.key!));
  for (const hit of Array.from(g.querySelectorAll(".ts-edge-hit"))) hit.remove(); // hover targets only
  return new XMLSerializer().serializeToString(svg);
}

/** Rasterise exported SVG text; scale 2 for sharp text, capped for huge graphs. */
export async function svgToPng(svgText: string, width: number, height: number): Promise<Blob> {
  const maxSide = 16000;
  const scale = Math.max(0.1, Math.min(2, maxSide / width, maxSide / height, Math.sqrt(120e6 / (width * height))));
  const url = URL.createObjectURL(new Blob([svgText], { type: "image/svg+xml" }));
  try {
    const img = new Image();
    img.decoding = "async";
    const loaded = new Promise<void>((res, rej) => {
      img.onload = () => res();
      img.onerror = () => rej(new Error("could not render the SVG to an image"));
    });
    img.src = url;
    await loaded;
    const canvas = document.createElement("canvas");
    canvas.width = Math.ceil(width * scale);
    canvas.height = Math.ceil(height * scale);
    const ctx = canvas.getContext("2d")!;
    ctx.scale(scale, scale);
    ctx.drawImage(img, 0, 0, width, height);
    return await new Promise<Blob>((res, rej) => canvas.toBlob((b) => (b ? res(b) : rej(new Error("PNG encoding failed"))), "image/png"));
  } finally {
    URL.revokeObjectURL(url);
  }
}
