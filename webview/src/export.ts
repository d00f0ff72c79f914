// Export the current view (the whole laid-out graph, not just the window) as SVG or PNG.
// The file must stand alone, at its own size: the page's style rules for what is drawn (none
// of the page's layout) go in with every theme variable (var(--ts-*) set on the root)
// replaced by its current value, so the export looks like the screen in any theme; a box's
// own (--ts-heat, "Colour by") is set on the box, as on screen. Colours the page mixes
// (color-mix()) are written out as plain colours on each element. The work is done in short
// tasks (a big graph's export was one task of up to a second): drawing and styling in slices,
// the PNG rasterised and encoded off the page's thread.
import { drawAll, paintHeat, type DrawInput } from "./draw";
import { slicer } from "./tasks";

const SVGNS = "http://www.w3.org/2000/svg";

/** Most work an export does in one task before it lets the page go on (ms). */
const SLICE_MS = 16;

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
async function graphCss(root: Element, svg: SVGSVGElement, pause: () => Promise<void>): Promise<{ all: string; plain: string; mixing: string[] }> {
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
      await pause(); // (each selector is matched against the whole drawing)
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
async function paintMixed(svg: SVGSVGElement, style: SVGStyleElement, root: Element, mixing: string[], pause: () => Promise<void>): Promise<void> {
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
      await pause();
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
export async function exportSvg(
  d: DrawInput,
  defs: SVGDefsElement,
  root: Element,
  background: string,
  heat: ReadonlyMap<string, number>,
  hasError: string | null = null,
): Promise<string> {
  const pause = slicer(SLICE_MS);
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
  await drawAll(g, d, pause);
  for (const box of Array.from(g.querySelectorAll<SVGGElement>(".ts-nodes > [data-key]"))) {
    paintHeat(box, heat.get(box.dataset.key!));
    if (box.dataset.key === hasError) box.classList.add("ts-has-error");
    await pause();
  }
  for (const hit of Array.from(g.querySelectorAll(".ts-edge-hit"))) {
    hit.remove(); // hover targets only
    await pause();
  }
  // (the rules for what was drawn: chosen once the drawing is complete)
  const css = await graphCss(root, svg, pause);
  style.textContent = css.all;
  await paintMixed(svg, style, root, css.mixing, pause);
  style.textContent = css.plain;
  return serialize(svg, g, pause);
}

const XMLNS_DECL = ` xmlns="${SVGNS}"`;

/**
 * The SVG's text as one XMLSerializer call writes it, made an item at a time (that one call
 * over a 4,000-box drawing is a long task): a copy of the file without its layers' items, a
 * marker in each one's place, then each item, which serialised alone declares the namespace
 * its place in the file gives it.
 */
async function serialize(svg: SVGSVGElement, scene: SVGGElement, pause: () => Promise<void>): Promise<string> {
  const ser = new XMLSerializer();
  const frame = svg.cloneNode(false);
  const sceneFrame = scene.cloneNode(false);
  for (const child of Array.from(svg.childNodes)) frame.appendChild(child === scene ? sceneFrame : child.cloneNode(true));
  const layers: string[] = [];
  for (const layer of Array.from(scene.children)) {
    const copy = sceneFrame.appendChild(layer.cloneNode(false));
    if (!layer.hasChildNodes()) continue;
    // (a comment: a label's or an attribute's "<" is written escaped, never as one)
    copy.appendChild(document.createComment(`ts-layer-${layers.length}`));
    const parts: string[] = [];
    for (const item of Array.from(layer.childNodes)) {
      const text = ser.serializeToString(item);
      const head = `<${item.nodeName}`;
      if (!text.startsWith(head + XMLNS_DECL)) return ser.serializeToString(svg); // (not as expected: in one go)
      parts.push(head + text.slice(head.length + XMLNS_DECL.length));
      await pause();
    }
    layers.push(parts.join(""));
  }
  const text = ser.serializeToString(frame);
  return layers.reduce((t, items, i) => t.replace(`<!--ts-layer-${i}-->`, () => items), text);
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
    // (floor: a scale at the limit never rounds past it)
    const w = Math.floor(width * scale);
    const h = Math.floor(height * scale);
    try {
      // Drawn and encoded off the page's thread: on a canvas here, reading the pixels draws the
      // SVG in one task (0.3 s and more for a tall graph), and toDataURL encodes in another.
      return await encodeInWorker(await createImageBitmap(img, { resizeWidth: w, resizeHeight: h }));
    } catch {
      return await encodeHere(img, w, h); // (a browser without one or the other: the same picture)
    }
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** The PNG encoder's code: a worker's canvas, encoded there (the page's canvas.toBlob encodes in
 * the page's idle time: a second more for a tall graph). */
const ENCODER = `onmessage = async (e) => {
  try {
    const c = new OffscreenCanvas(e.data.width, e.data.height);
    c.getContext("bitmaprenderer").transferFromImageBitmap(e.data);
    postMessage(await c.convertToBlob({ type: "image/png" }));
  } catch (err) {
    postMessage(String(err));
  }
};`;

/** A PNG of the picture, encoded in a worker (the picture is handed over). */
async function encodeInWorker(picture: ImageBitmap): Promise<Blob> {
  const url = URL.createObjectURL(new Blob([ENCODER], { type: "text/javascript" }));
  try {
    const worker = new Worker(url, { name: "torchscope-png" });
    try {
      return await new Promise<Blob>((res, rej) => {
        worker.onmessage = (e: MessageEvent<Blob | string>) =>
          e.data instanceof Blob ? res(e.data) : rej(new Error(`PNG encoding failed (${e.data})`));
        worker.onerror = () => rej(new Error("PNG encoding failed"));
        worker.postMessage(picture, [picture]);
      });
    } finally {
      worker.terminate();
    }
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** A PNG of the image drawn at `w`×`h` px on the page (encoded asynchronously: toBlob). */
async function encodeHere(img: HTMLImageElement, w: number, h: number): Promise<Blob> {
  const canvas = document.createElement("canvas");
  canvas.width = w;
  canvas.height = h;
  const ctx = canvas.getContext("2d");
  if (!ctx) throw new Error(`the browser could not make a ${w}×${h} px canvas`);
  ctx.drawImage(img, 0, 0, w, h);
  return new Promise<Blob>((res, rej) => canvas.toBlob((b) => (b ? res(b) : rej(new Error("PNG encoding failed"))), "image/png"));
}
