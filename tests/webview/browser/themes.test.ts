// Every kind of theme is readable: the VS Code webview page with the --vscode-* variables
// real VS Code sets for its default light, dark, high contrast and high contrast light
// themes (captured by tests/webview/tools/vscode-theme-vars.ts), and the standalone page's
// own light and dark palettes. Text on every kind of box, and on every colour of the
// Colour by scale, keeps a WCAG contrast ≥ 4.5, and the overview follows the theme, also
// when it changes while the graph is open.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { FIXTURES, ROOT, launch, open, ready, shot } from "./browser";

interface Theme {
  theme: string;
  bodyClass: string;
  vars: Record<string, string>;
}
const THEMES = JSON.parse(readFileSync(join(import.meta.dirname, "vscode-themes.json"), "utf8")) as Record<string, Theme>;
const KINDS = ["light", "dark", "high-contrast", "high-contrast-light"] as const;

let browser: Browser;
let server: Server;
let base = "";
before(async () => {
  browser = await launch();
  const dist = join(ROOT, "webview", "dist");
  const page = `<!DOCTYPE html><html><head><meta name="torchscope-worker" content="/layout.worker.js">
<link rel="stylesheet" href="/viewer.css"></head>
<body><div id="torchscope"></div>
<script>
window.__posted = [];
function acquireVsCodeApi() { return { postMessage: (m) => window.__posted.push(m), getState: () => undefined, setState: () => {} }; }
</script>
<script src="/viewer-page.js"></script></body></html>`;
  server = createServer((req, res) => {
    const files: Record<string, [string, string]> = {
      "/viewer-page.js": ["text/javascript", "viewer-page.js"],
      "/viewer.css": ["text/css", "viewer.css"],
      "/layout.worker.js": ["text/javascript", "layout.worker.js"],
    };
    const f = files[req.url ?? ""];
    if (req.url === "/") res.writeHead(200, { "content-type": "text/html" }).end(page);
    else if (f) res.writeHead(200, { "content-type": f[0] }).end(readFileSync(join(dist, f[1])));
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
after(async () => {
  await browser?.close();
  server?.close();
});

/** What VS Code does to a webview's document for a theme: variables on <html>, kind on <body>. */
async function applyTheme(page: Page, kind: (typeof KINDS)[number]): Promise<void> {
  const t = THEMES[kind]!;
  const classes = t.bodyClass.split(/\s+/).filter((c) => /^vscode-(light|dark|high-contrast(-light)?)$/.test(c));
  await page.evaluate(
    ({ vars, classes }) => {
      const html = document.documentElement;
      html.removeAttribute("style");
      for (const [k, v] of Object.entries(vars)) html.style.setProperty(k, v);
      document.body.className = classes.join(" ");
    },
    { vars: t.vars, classes },
  );
}

async function vscodePage(kind: (typeof KINDS)[number], graph: string, size = { width: 1100, height: 560 }): Promise<Page> {
  const page = await (await browser.newContext({ viewport: size })).newPage();
  await page.goto(base);
  await applyTheme(page, kind);
  await page.waitForFunction(() => (window as any).__posted.some((m: any) => m.type === "ready"));
  const b64 = readFileSync(join(FIXTURES, `${graph}.msgpack`)).toString("base64");
  await page.evaluate((data) => {
    const bin = atob(data);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    // As GraphPanel posts it: with the panel's origin.
    window.postMessage({ type: "graph", data: bytes.buffer, origin: { uri: "file:///w/m.py", target: "model", title: "Forward pass" } }, "*");
  }, b64);
  await ready(page);
  return page;
}

/** tsx names the functions it compiles with a `__name` helper the page doesn't have. */
const NO_NAMES = "globalThis.__name ??= (f) => f";

interface Pair {
  what: string;
  ratio: number;
  text: string;
  back: string;
}

/**
 * WCAG contrast of graph text against what is under it: each kind of box's fill (alpha
 * blended over the page background) and, for edge labels and frame titles, the background.
 */
async function contrasts(page: Page): Promise<Pair[]> {
  await page.evaluate(NO_NAMES);
  return page.evaluate(() => {
    const probe = document.createElement("span");
    document.body.appendChild(probe);
    const rgba = (css: string): number[] => {
      probe.style.color = "";
      probe.style.color = css;
      const color = getComputedStyle(probe).color;
      // (a color-mix() fill, a heat colour, computes to `color(srgb r g b [/ a])`, 0..1)
      const mixed = /color\(srgb ([\d.e-]+) ([\d.e-]+) ([\d.e-]+)(?: \/ ([\d.e-]+))?\)/.exec(color);
      if (mixed) return [Number(mixed[1]) * 255, Number(mixed[2]) * 255, Number(mixed[3]) * 255, mixed[4] === undefined ? 1 : Number(mixed[4])];
      const m = /rgba?\(([^)]+)\)/.exec(color)!;
      const p = m[1]!.split(",").map(Number);
      return [p[0]!, p[1]!, p[2]!, p[3] ?? 1];
    };
    const over = (top: number[], under: number[]): number[] => [0, 1, 2].map((i) => top[i]! * top[3]! + under[i]! * (1 - top[3]!)).concat(1);
    const lum = (c: number[]): number => {
      const f = (v: number): number => (v / 255 <= 0.03928 ? v / 255 / 12.92 : ((v / 255 + 0.055) / 1.055) ** 2.4);
      return 0.2126 * f(c[0]!) + 0.7152 * f(c[1]!) + 0.0722 * f(c[2]!);
    };
    const ratio = (a: number[], b: number[]): number => {
      const [x, y] = [lum(a), lum(b)];
      return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
    };
    const root = document.getElementById("torchscope")!;
    const bg = rgba(getComputedStyle(root).backgroundColor);
    const out: { what: string; ratio: number; text: string; back: string }[] = [];
    const fillOf = (el: Element): number[] => {
      const cs = getComputedStyle(el);
      const c = rgba(cs.fill);
      // (an element's own opacity fades its paint as fill-opacity does: a faded line of text)
      return [c[0]!, c[1]!, c[2]!, c[3]! * Number(cs.fillOpacity || 1) * Number(cs.opacity || 1)];
    };
    const add = (what: string, text: Element, back: number[]): void => {
      const t = over(fillOf(text), back);
      out.push({ what, ratio: ratio(t, back), text: `rgb(${t.slice(0, 3).join(",")})`, back: `rgb(${back.slice(0, 3).join(",")})` });
    };
    for (const g of Array.from(document.querySelectorAll(".ts-nodes > g.ts-node"))) {
      const heat = Number((g as HTMLElement).dataset.heat ?? "0");
      const kind = (g as HTMLElement).dataset.kind! + (heat >= 0.9 ? " (hottest)" : "");
      const boxFill = over(fillOf(g.querySelector(".ts-box")!), bg);
      for (const t of Array.from(g.querySelectorAll("text"))) add(`${kind} ${t.getAttribute("class")}`, t, boxFill);
    }
    const label = document.querySelector(".ts-elabel");
    if (label) add("edge label", label, bg);
    const head = document.querySelector(".ts-cluster-head .ts-title");
    if (head) add("frame title", head, bg);
    probe.remove();
    return out;
  });
}

function assertReadable(pairs: Pair[], where: string): void {
  const kinds = new Set(pairs.map((p) => p.what.split(" ")[0]));
  for (const k of ["module", "op", "input", "output", "group", "constant", "edge", "frame"]) assert.ok(kinds.has(k), `${where}: a ${k} was checked`);
  for (const p of pairs) assert.ok(p.ratio >= 4.5, `${where}: ${p.what}: ${p.text} on ${p.back} has contrast ${p.ratio.toFixed(2)} < 4.5`);
}

/** The overview: its CSS background, and whether its canvas shows pixels of `node` colour. */
async function minimap(page: Page, node: string): Promise<{ background: string; transparent: boolean; nodes: boolean }> {
  await page.evaluate(NO_NAMES);
  return page.evaluate((nodeColor) => {
    const c = document.querySelector<HTMLCanvasElement>("canvas.ts-minimap")!;
    const probe = document.createElement("span");
    probe.style.color = nodeColor;
    document.body.appendChild(probe);
    const [r, g, b] = /rgba?\(([^)]+)\)/.exec(getComputedStyle(probe).color)![1]!.split(",").map(Number);
    probe.remove();
    const px = c.getContext("2d")!.getImageData(0, 0, c.width, c.height).data;
    let nodes = false;
    let transparent = false;
    for (let i = 0; i < px.length; i += 4) {
      if (px[i + 3] === 0) transparent = true;
      if (px[i] === r && px[i + 1] === g && px[i + 2] === b && px[i + 3] === 255) nodes = true;
    }
    return { background: getComputedStyle(c).backgroundColor, transparent, nodes };
  }, node);
}

const hexRgb = (hex: string): string => {
  const n = parseInt(hex.slice(1), 16);
  return `rgb(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255})`;
};

describe("VS Code themes", () => {
  for (const kind of KINDS) {
    test(`${THEMES[kind]!.theme}: readable boxes, overview on the theme's background`, async () => {
      const page = await vscodePage(kind, "gpt2");
      await shot(page, `theme-vscode-${kind}`);
      assertReadable(await contrasts(page), THEMES[kind]!.theme);
      const bg = hexRgb(THEMES[kind]!.vars["--vscode-editor-background"]!);
      assert.equal(await page.locator("#torchscope").evaluate((el) => getComputedStyle(el).backgroundColor), bg);
      // The whole graph doesn't fit this short window at a readable zoom: the overview shows.
      const mini = page.locator("canvas.ts-minimap");
      assert.ok(await mini.isVisible(), "overview shown");
      const node = await page.locator("#torchscope").evaluate((el) => getComputedStyle(el).getPropertyValue("--ts-mini-node").trim());
      const m = await minimap(page, node);
      assert.equal(m.background, bg, "overview background is the editor's");
      assert.ok(m.transparent && m.nodes, "the canvas paints boxes only, over that background");
      await page.context().close();
    });
  }

  test("the error node and banner stay readable in every theme", async () => {
    for (const kind of KINDS) {
      const page = await vscodePage(kind, "error");
      await page.click(".ts-banner");
      await ready(page);
      await page.locator(".ts-node[data-kind=error]").waitFor();
      const pairs = (await contrasts(page)).filter((p) => p.what.startsWith("error"));
      assert.ok(pairs.length > 0);
      for (const p of pairs) assert.ok(p.ratio >= 4.5, `${kind}: ${p.what} ${p.ratio.toFixed(2)}`);
      await shot(page, `theme-vscode-${kind}-error`);
      await page.context().close();
    }
  });

  test("a theme change while the graph is open repaints the overview", async () => {
    const page = await vscodePage("light", "gpt2");
    const mini = page.locator("canvas.ts-minimap");
    assert.ok(await mini.isVisible());
    await applyTheme(page, "high-contrast");
    const t = THEMES["high-contrast"]!.vars;
    const hcBg = hexRgb(t["--vscode-editor-background"]!);
    await page.waitForFunction((bg) => getComputedStyle(document.querySelector("canvas.ts-minimap")!).backgroundColor === bg, hcBg);
    const m = await minimap(page, t["--vscode-editor-foreground"]!);
    assert.ok(m.nodes, "boxes repainted in the high contrast theme's colour");
    assertReadable(await contrasts(page), "after switching to high contrast");
    await shot(page, "theme-vscode-switched-to-hc");
    await page.context().close();
  });
});

/** Colour by time: the hottest boxes' text against their heat colour (QA: 4.16 light). */
async function hottest(page: Page, where: string): Promise<void> {
  await page.selectOption("[data-role=overlay]", "time");
  await page.waitForFunction(() => document.querySelectorAll(".ts-nodes > g.ts-node[data-heat]").length > 0);
  const pairs = (await contrasts(page)).filter((p) => p.what.includes("(hottest)"));
  assert.ok(pairs.length > 0, `${where}: a box at the hot end`);
  for (const p of pairs) assert.ok(p.ratio >= 4.5, `${where}: ${p.what}: ${p.text} on ${p.back} has contrast ${p.ratio.toFixed(2)} < 4.5`);
}

describe("text on the hottest colour", () => {
  test("readable in the standalone palettes and every VS Code theme", async () => {
    for (const dark of [false, true]) {
      const o = await open(browser, "gpt2", { dark, width: 1100, height: 560 });
      await hottest(o.page, dark ? "standalone dark" : "standalone light");
      await shot(o.page, `theme-heat-standalone-${dark ? "dark" : "light"}`);
      await o.page.context().close();
    }
    for (const kind of KINDS) {
      const page = await vscodePage(kind, "gpt2");
      await hottest(page, THEMES[kind]!.theme);
      await page.context().close();
    }
  });
});

describe("standalone page palettes", () => {
  for (const dark of [false, true]) {
    test(`${dark ? "dark" : "light"} palette: readable boxes`, async () => {
      const o = await open(browser, "gpt2", { dark, width: 1100, height: 560 });
      assertReadable(await contrasts(o.page), dark ? "standalone dark" : "standalone light");
      const m = await minimap(
        o.page,
        await o.page.locator("#torchscope").evaluate((el) => getComputedStyle(el).getPropertyValue("--ts-mini-node").trim()),
      );
      assert.equal(m.background, dark ? "rgb(13, 17, 23)" : "rgb(255, 255, 255)");
      assert.ok(m.nodes);
      await shot(o.page, `theme-standalone-${dark ? "dark" : "light"}`);
      assert.deepEqual(o.errors, []);
      await o.page.context().close();
    });
  }
});

/** Colour by time, then every heat from the cold to the hot end in steps of 5 % on every
 * coloured box: both lines of text keep 4.5 on each fill the scale makes (QA: the second
 * line had 3.9–4.5). */
async function wholeScale(page: Page, where: string): Promise<void> {
  await page.selectOption("[data-role=overlay]", "time");
  await page.waitForFunction(() => document.querySelectorAll(".ts-nodes > g.ts-node[data-heat]").length > 0);
  const low = new Set<string>();
  let subs = 0;
  for (let h = 0; h <= 100; h += 5) {
    await page.evaluate((at) => {
      for (const g of Array.from(document.querySelectorAll<SVGGElement>(".ts-nodes > g.ts-node[data-heat]"))) {
        g.style.setProperty("--ts-heat", `${at}%`);
        g.dataset.heat = String(at / 100);
      }
    }, h);
    const pairs = await contrasts(page);
    subs += pairs.filter((p) => p.what.endsWith("ts-sub")).length;
    for (const p of pairs) if (p.ratio < 4.5) low.add(`heat ${h} %: ${p.what}: ${p.text} on ${p.back} has ${p.ratio.toFixed(2)}`);
  }
  assert.ok(subs > 0, `${where}: boxes with a second line were checked`);
  assert.deepEqual([...low], [], `${where}: text below 4.5`);
}

describe("text on every colour of the scale", () => {
  test("both lines readable from the cold to the hot end, standalone and in every VS Code theme", async () => {
    for (const dark of [false, true]) {
      const o = await open(browser, "gpt2", { dark, width: 1100, height: 560 });
      await wholeScale(o.page, dark ? "standalone dark" : "standalone light");
      await o.page.context().close();
    }
    for (const kind of KINDS) {
      const page = await vscodePage(kind, "gpt2");
      await wholeScale(page, THEMES[kind]!.theme);
      await page.context().close();
    }
  });
});
