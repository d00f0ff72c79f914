// Captures the --vscode-* variables real VS Code (code-server) gives a webview in each kind
// of theme, for the viewer's theme tests (tests/webview/browser/vscode-themes.json).
// Usage (needs `make code-server`): node --import tsx tests/webview/tools/vscode-theme-vars.ts
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { launch, ROOT } from "../browser/browser";

const CODE_SERVER = join(ROOT, ".cache", "code-server-4.100.3", "node_modules", "code-server", "out", "node", "entry.js");
const THEMES: Record<string, string> = {
  light: "Default Light Modern",
  dark: "Default Dark Modern",
  "high-contrast": "Default High Contrast",
  "high-contrast-light": "Default High Contrast Light",
};
const OUT = join(ROOT, "tests", "webview", "browser", "vscode-themes.json");

function freePort(): Promise<number> {
  return new Promise((res) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => res(port));
    });
  });
}

async function capture(theme: string): Promise<{ bodyClass: string; vars: Record<string, string> }> {
  const base = mkdtempSync(join(tmpdir(), "torchscope-themes-"));
  const ud = join(base, "ud");
  const ws = join(base, "ws");
  mkdirSync(join(ud, "User"), { recursive: true });
  mkdirSync(ws);
  writeFileSync(join(ws, "README.md"), "# theme\n");
  writeFileSync(
    join(ud, "User", "settings.json"),
    JSON.stringify({
      "workbench.colorTheme": theme,
      "workbench.startupEditor": "none",
      "security.workspace.trust.enabled": false,
      "telemetry.telemetryLevel": "off",
      "git.enabled": false,
      "window.autoDetectColorScheme": false,
    }),
  );
  const port = await freePort();
  const env = { ...process.env, XDG_CONFIG_HOME: join(base, "xdg-config"), XDG_DATA_HOME: join(base, "xdg-data") };
  const proc = spawn(
    "node",
    [
      CODE_SERVER,
      "--bind-addr",
      `127.0.0.1:${port}`,
      "--auth",
      "none",
      "--user-data-dir",
      ud,
      "--extensions-dir",
      join(base, "ext"),
      "--disable-telemetry",
      "--disable-update-check",
      "--disable-workspace-trust",
      "--disable-getting-started-override",
      "--ignore-last-opened",
      ws,
    ],
    { env, detached: true, stdio: ["ignore", "pipe", "pipe"] },
  );
  await new Promise<void>((res) => {
    let log = "";
    const on = (b: Buffer): void => {
      log += b.toString();
      if (log.includes("HTTP server listening")) res();
    };
    proc.stdout!.on("data", on);
    proc.stderr!.on("data", on);
  });
  const browser = await launch();
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`);
    await page.waitForSelector(".explorer-folders-view .monaco-list-row", { timeout: 60_000 });
    await page.locator(".explorer-folders-view .monaco-list-row", { hasText: "README.md" }).click();
    await page.waitForSelector(".monaco-editor .view-lines");
    // The Markdown preview is a webview: it gets the same variables as the graph panel.
    // Its command registers once the Markdown extension has started: retry until listed.
    for (let i = 0; ; i++) {
      await page.keyboard.press("F1");
      await page.locator(".quick-input-widget input").fill(">Markdown: Open Preview to the Side");
      const item = page.locator(".quick-input-list .monaco-list-row", { hasText: "Markdown: Open Preview to the Side" });
      try {
        await item.first().waitFor({ timeout: 3000 });
        await page.keyboard.press("Enter");
        break;
      } catch (e) {
        if (i > 15) throw e;
        await page.keyboard.press("Escape");
        await page.waitForTimeout(2000);
      }
    }
    const frame = page.frameLocator("iframe.webview.ready").frameLocator("#active-frame");
    try {
      await frame.locator("body").waitFor({ state: "attached", timeout: 30_000 });
    } catch (e) {
      await page.screenshot({ path: join(tmpdir(), "theme-vars-failed.png") });
      throw e;
    }
    return await frame.locator("html").evaluate((html) => {
      const vars: Record<string, string> = {};
      const style = (html as HTMLElement).style;
      for (let i = 0; i < style.length; i++) {
        const name = style.item(i);
        if (name.startsWith("--vscode-")) vars[name] = style.getPropertyValue(name).trim();
      }
      return { bodyClass: document.body.className, vars };
    });
  } finally {
    await browser.close();
    process.kill(-proc.pid!, "SIGTERM");
    setTimeout(() => rmSync(base, { recursive: true, force: true }), 1500).unref();
  }
}

(async () => {
  const out: Record<string, { theme: string; bodyClass: string; vars: Record<string, string> }> = {};
  for (const [kind, theme] of Object.entries(THEMES)) {
    const { bodyClass, vars } = await capture(theme);
    out[kind] = { theme, bodyClass, vars };
    console.log(`${kind}: ${theme}, body "${bodyClass}", ${Object.keys(vars).length} variables`);
  }
  writeFileSync(OUT, `${JSON.stringify(out, null, 1)}\n`);
  console.log(`wrote ${OUT}`);
})();
