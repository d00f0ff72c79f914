// Export the current view (the whole laid-out graph, not just the window) as SVG or PNG.
// The file must stand alone, at its own size: the page's style rules for what is drawn (none
// of the page's layout) go in with every theme variable (var(--ts-*) set on the root)
// replaced by its current value, so the export looks like the screen in any theme; a box's
// own (--ts-heat, "Colour by") is set on the box, as on screen. Colours the page mixes
// (color-mix()) are written out as plain colours on each element.
import { drawAll, paintHeat, type DrawInput } from "./draw";

const SVGNS = "http://www.w3.org/2000/svg";

/** A selector list split at its top-level commas (not those inside `:not(…)`). */
export function selectorItems(list: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let from = 0;
  for (let i = 0; i < list.length; i++) {
    const c = list[i];
    if (c === "(" || c === "[") depth++;
    else if (c === ")" || c === "]") depth--;
    else if (c === "," && depth === 0) {
      out.push(list.slice(from, i).trim());
      from = i + 1;
    }
  }
  out.push(list.slice(from).trim());
  return out.filter(Boolean);
}

/** Declarations a picture has no use for: the page's pointer, what it can select or hit. */
const PAGE_ONLY = /^(cursor|user-select|-webkit-user-select|pointer-events)\s*:/i;

/** A declaration block's declarations ("fill: red", …), those only the page uses left out. */
export function drawingDeclarations(block: string): string[] {
  return block
    .split(";")
    .map((d) => d.trim())
    .filter((d) => d && !PAGE_ONLY.test(d));
}

/**
 * The page's style rules that the drawing in `svg` needs, with theme variables resolved: only
 * the selectors that match something drawn inside it (never the page's layout: the stage's
 * `.ts-svg { width: 100%; height: 100% }`, which would squeeze the file into the window it is
 * opened in, the toolbar, the table, …) and without the page's pointer declarations. `all`
 * as the page has them; `plain` without the declarations that mix colours (color-mix(), which
 * SVG editors and older renderers don't read: the export paints those on each element), and
 * `mixing`, the selectors of the rules that had them.
 */
function graphCss(root: Element, svg: SVGSVGElement): { all: string; plain: string; mixing: string[] } {
  const cs = getComputedStyle(root);
  const resolve = (text: string) => text.replace(/var\((--ts-[\w-]+)[^)]*\)/g, (m, name: string) => cs.getPropertyValue(name).trim() || m);
  const drawn = (selector: string): boolean => {
    try {
      return svg.querySelector(selector) !== null;
    } catch {
      return false; // (a selector this browser can't match here: a pseudo-element)
    }
  };
  const all: string[] = [];
  const plain: string[] = [];
  const mixing: string[] = [];
  for (const sheet of Array.from(document.styleSheets)) {
    let rules: CSSRuleList;
    try {
      rules = sheet.cssRules;
    } catch {
      continue;
    }
    for (const r of Array.from(rules)) {
      if (!(r instanceof CSSStyleRule) || !r.selectorText.includes(".ts-")) continue;
      const selector = selectorItems(r.selectorText).filter(drawn).join(", ");
      if (!selector) continue;
      // A variable the root doesn't set is one each box sets for itself (--ts-heat): kept.
      // (Resolved first: inside VS Code a theme variable is itself a color-mix().)
      const decls = drawingDeclarations(r.style.cssText).map(resolve);
      if (!decls.length) continue;
      const rule = (list: string[]) => `${selector} { ${list.map((d) => `${d};`).join(" ")} }`;
      all.push(rule(decls));
      const kept = decls.filter((d) => !d.includes("color-mix("));
      if (kept.length < decls.length) mixing.push(selector);
      if (kept.length) plain.push(rule(kept));
    }
  }
  return { all: all.join("\n"), plain: plain.join("\n"), mixing };
}

/** A computed colour as SVG 1.1 reads it: Chromium gives a mixed colour as
 * `color(srgb r g b / a)`, which becomes `rgb(…)` and an opacity; null for anything else. */
export function plainColor(computed: string): { rgb: string; alpha: number } | null {
  const m = /^color\(srgb ([-\d.e]+) ([-\d.e]+) ([-\d.e]+)(?: \/ ([-\d.e]+))?\)$/.exec(computed.trim());
  if (!m) return null;
  const channel = (v: string) => Math.round(Math.min(1, Math.max(0, Number(v))) * 255);
  const alpha = m[4] === undefined ? 1 : Math.min(1, Math.max(0, Number(m[4])));
  return { rgb: `rgb(${channel(m[1]!)}, ${channel(m[2]!)}, ${channel(m[3]!)})`, alpha };
}

/** Each element a colour-mixing rule paints gets that colour as its own plain fill or stroke,
 * computed while `svg` lies in the page under `root` (off screen), where the page's own rules
 * and theme variables apply to it; its `<style>` is out meanwhile (the page's content policy
 * refuses a style element it did not make). */
function paintMixed(svg: SVGSVGElement, style: SVGStyleElement, root: Element, mixing: string[]): void {
  // (matched while apart from the page: most exports have none, and a big graph in the page
  // costs a style pass over all of it)
  const painted = mixing.length ? Array.from(svg.querySelectorAll<SVGElement>(mixing.join(","))) : [];
  if (!painted.length) return;
  const next = style.nextSibling;
  style.remove();
  svg.style.position = "fixed";
  svg.style.left = "-100000px";
  root.appendChild(svg);
  try {
    for (const el of painted) {
      const cs = getComputedStyle(el);
      for (const prop of ["fill", "stroke"]) {
        const c = plainColor(cs.getPropertyValue(prop));
        if (!c) continue;
        const opacity = Number.parseFloat(cs.getPropertyValue(`${prop}-opacity`));
        el.style.setProperty(prop, c.rgb);
        if (c.alpha < 1) el.style.setProperty(`${prop}-opacity`, String(Number((c.alpha * (Number.isFinite(opacity) ? opacity : 1)).toFixed(4))));
      }
    }
  } finally {
    svg.remove();
    svg.removeAttribute("style");
    svg.insertBefore(style, next);
  }
}

/** The margin around the graph in an export. */
const PAD = 16;

/** An export's size in CSS px: the laid-out graph and its margin (what a PNG rasterises). */
export function exportSize(layout: { width: number; height: number }): [number, number] {
  return [Math.ceil(layout.width + PAD * 2), Math.ceil(layout.height + PAD * 2)];
}

/** `heat`: the overlay's colours by drawn key ("Colour by"), as the screen shows them;
 * `hasError`: the drawn key of the box that hides the failing call (outlined as on screen). */
export function exportSvg(
  d: DrawInput,
  defs: SVGDefsElement,
  root: Element,
  background: string,
  heat: ReadonlyMap<string, number>,
  hasError: string | null = null,
): string {
  const [w, h] = exportSize(d.layout);
  const svg = document.createElementNS(SVGNS, "svg");
  svg.setAttribute("xmlns", SVGNS);
  svg.setAttribute("class", "ts-svg");
  svg.setAttribute("width", String(w));
  svg.setAttribute("height", String(h));
  svg.setAttribute("viewBox", `${-PAD} ${-PAD} ${w} ${h}`);
  const style = document.createElementNS(SVGNS, "style");
  svg.appendChild(style);
  const bg = document.createElementNS(SVGNS, "rect");
  for (const [k, v] of Object.entries({ x: -PAD, y: -PAD, width: w, height: h, fill: background })) bg.setAttribute(k, String(v));
  svg.appendChild(bg);
  svg.appendChild(defs.cloneNode(true));
  const g = document.createElementNS(SVGNS, "g");
  svg.appendChild(g);
  drawAll(g, d);
  for (const box of Array.from(g.querySelectorAll<SVGGElement>(".ts-nodes > [data-key]"))) {
    paintHeat(box, heat.get(box.dataset.key!));
    if (box.dataset.key === hasError) box.classList.add("ts-has-error");
  }
  for (const hit of Array.from(g.querySelectorAll(".ts-edge-hit"))) hit.remove(); // hover targets only
  // (the rules for what was drawn: chosen once the drawing is complete)
  const css = graphCss(root, svg);
  style.textContent = css.all;
  paintMixed(svg, style, root, css.mixing);
  style.textContent = css.plain;
  return new XMLSerializer().serializeToString(svg);
}

/** What a browser's canvas holds (Chromium's limits: 32,767 px a side, 16,384² px in all). */
export const CANVAS_MAX_SIDE = 32_767;
export const CANVAS_MAX_AREA = 16_384 * 16_384;
/** Past this many pixels, scale 2 gives way (down to 1): a lighter file, written faster. */
const SHARP_MAX_AREA = 64e6;

/**
 * The scale to rasterise a `width`×`height` (CSS px) export at: 2 for sharp text, less for a
 * big graph, never below 1 (smaller text than on screen at 100 % is unreadable: a 12-layer
 * GPT-2 expanded was shrunk to 3–4 px text); null when even scale 1 is past the canvas
 * limits, where only SVG can hold the graph.
 */
export function pngScale(width: number, height: number): number | null {
  const sharp = Math.max(1, Math.min(2, Math.sqrt(SHARP_MAX_AREA / (width * height))));
  const most = Math.min(CANVAS_MAX_SIDE / width, CANVAS_MAX_SIDE / height, Math.sqrt(CANVAS_MAX_AREA / (width * height)));
  const scale = Math.min(sharp, most);
  return scale >= 1 ? scale : null;
}

/** Rasterise exported SVG text (`width`×`height` CSS px) at `scale` (pngScale). */
export async function svgToPng(svgText: string, width: number, height: number, scale: number): Promise<Blob> {
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
    // (floor: a scale at the limit never rounds past it)
    canvas.width = Math.floor(width * scale);
    canvas.height = Math.floor(height * scale);
    const ctx = canvas.getContext("2d");
    if (!ctx) throw new Error(`the browser could not make a ${canvas.width}×${canvas.height} px canvas`);
    ctx.scale(canvas.width / width, canvas.height / height);
    ctx.drawImage(img, 0, 0, width, height);
    return await encodePng(canvas);
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** Up to this many pixels a PNG is encoded at once (0.2 s at most); toBlob waits for the page
 * to be idle first, up to a second (Chromium) after a click. */
const ENCODE_NOW_MAX_AREA = 32e6;

async function encodePng(canvas: HTMLCanvasElement): Promise<Blob> {
  if (canvas.width * canvas.height > ENCODE_NOW_MAX_AREA) {
    return new Promise<Blob>((res, rej) => canvas.toBlob((b) => (b ? res(b) : rej(new Error("PNG encoding failed"))), "image/png"));
  }
  const url = canvas.toDataURL("image/png");
  if (!url.startsWith("data:image/png;base64,")) throw new Error("PNG encoding failed");
  const bin = atob(url.slice(url.indexOf(",") + 1));
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new Blob([bytes], { type: "image/png" });
}
