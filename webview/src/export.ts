// Export the drawn graph (the whole current view, not just the window) as SVG or PNG.
// CSS variables and stylesheet rules don't travel with a file, so computed styles are
// copied onto the clone as attributes.
import type { Layout } from "./layout";

const PROPS = [
  "fill", "fill-opacity", "stroke", "stroke-width", "stroke-dasharray", "stroke-opacity", "opacity",
  "font-family", "font-size", "font-weight", "paint-order", "stroke-linejoin", "display",
] as const;

export function exportSvg(svg: SVGSVGElement, scene: SVGGElement, layout: Layout, background: string): string {
  const pad = 16;
  const out = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  out.setAttribute("xmlns", "http://www.w3.org/2000/svg");
  const w = Math.ceil(layout.width + pad * 2);
  const h = Math.ceil(layout.height + pad * 2);
  out.setAttribute("width", String(w));
  out.setAttribute("height", String(h));
  out.setAttribute("viewBox", `${-pad} ${-pad} ${w} ${h}`);
  const bg = document.createElementNS("http://www.w3.org/2000/svg", "rect");
  bg.setAttribute("x", String(-pad));
  bg.setAttribute("y", String(-pad));
  bg.setAttribute("width", String(w));
  bg.setAttribute("height", String(h));
  bg.setAttribute("fill", background);
  out.appendChild(bg);
  const defs = svg.querySelector("defs");
  if (defs) out.appendChild(inlineClone(defs));
  out.appendChild(inlineClone(scene));
  return new XMLSerializer().serializeToString(out);
}

function inlineClone<T extends Element>(src: T): T {
  const clone = src.cloneNode(true) as T;
  const a = [src, ...src.querySelectorAll("*")];
  const b = [clone, ...clone.querySelectorAll("*")];
  for (let i = 0; i < a.length; i++) {
    const cs = getComputedStyle(a[i]!);
    const el = b[i]!;
    for (const p of PROPS) {
      const v = cs.getPropertyValue(p);
      if (v) el.setAttribute(p, v);
    }
    el.removeAttribute("class");
  }
  return clone;
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
