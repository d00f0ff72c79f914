// The graph panel (CSP, handshake, one panel per target, restore after reload) and the
// visualize command's flow against a fake server: input box on needs-input, remembered
// answers, a model that raises, no torch.
// First: vscode.debug on the stub before the extension's modules load (nothing is paused).
import "./debug-fake";
import { strict as assert } from "node:assert";
import { beforeEach, describe, it } from "node:test";
import { mkdtempSync, readdirSync, writeFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as vs from "./vscode-stub";
import { GraphPanel, exactArrayBuffer, panelHtml, type PanelEvents } from "../../../extension/src/graphPanel";
import type { Server } from "../../../extension/src/client";
import type { TraceParams, TraceResult } from "../../../extension/src/protocol";
import { SUMMARY, fail, fakeServer, wiredExtension } from "./wiring";

const dir = mkdtempSync(join(tmpdir(), "torchscope-unit-"));
const graphFile = join(dir, "g.msgpack");
writeFileSync(graphFile, Buffer.from([0x81, 0xa1, 0x61, 0x01]));
const viewerDir = vs.Uri.file("/ext/viewer") as unknown as import("vscode").Uri;

function events(): PanelEvents & { revealed: unknown[]; retraced: number; inputChanges: number } {
  const e = {
    revealed: [] as unknown[],
    retraced: 0,
    inputChanges: 0,
    reveal: (site: unknown) => void e.revealed.push(site),
    save: () => undefined,
    retrace: () => void e.retraced++,
    changeInput: () => void e.inputChanges++,
    log: vs.logChannel() as never,
  };
  return e;
}

beforeEach(() => {
  for (const p of GraphPanel.all()) p.dispose();
  vs.reset();
});

describe("panel page", () => {
  it("has a strict nonce CSP that still lets Graphviz WASM run in a Blob worker", () => {
    const html = panelHtml({
      cspSource: "https://x",
      scriptUri: "https://x/viewer-page.js",
      workerUri: "https://x/layout.worker.js",
      styleUri: "https://x/viewer.css",
      nonce: "N1",
      title: "t",
    });
    const csp = /Content-Security-Policy" content="([^"]+)"/.exec(html)![1]!.replace(/&#39;/g, "'");
    assert.match(csp, /^default-src 'none'/);
    assert.match(csp, /script-src 'nonce-N1' 'wasm-unsafe-eval'/);
    assert.match(csp, /worker-src blob:/);
    assert.ok(!csp.includes("unsafe-inline"));
    // The worker's code is fetched from the viewer folder only, not from anywhere.
    assert.match(csp, /connect-src https:\/\/x;/);
    assert.match(html, /<meta name="torchscope-worker" content="https:\/\/x\/layout.worker.js">/);
    // fetched from the start, in the mode the page's own fetch uses (else it is fetched twice)
    assert.match(html, /<link rel="preload" href="https:\/\/x\/layout.worker.js" as="fetch" crossorigin="anonymous">/);
    assert.match(html, /<script nonce="N1" src="https:\/\/x\/viewer-page.js"><\/script>/);
  });
  it("posts exactly the file's bytes", () => {
    const pool = Buffer.alloc(64, 7);
    const view = pool.subarray(8, 12);
    const ab = exactArrayBuffer(view);
    assert.equal(ab.byteLength, 4);
  });
});

describe("GraphPanel", () => {
  const origin = { uri: "file:///w/mlp.py", target: "MLP", title: "Forward pass: MLP" };

  it("opens one panel per target, limited to the viewer folder, kept alive when hidden", () => {
    const ev = events();
    const a = GraphPanel.createOrShow(viewerDir, origin, ev);
    const b = GraphPanel.createOrShow(viewerDir, { ...origin, title: "Forward pass: MLP2" }, ev);
    assert.equal(a, b);
    assert.equal(vs.panels.length, 1);
    const p = vs.panels[0]!;
    assert.equal(p.viewType, "torchscope.graph");
    assert.equal(p.title, "Forward pass: MLP2");
    assert.equal(p.revealed, 1);
    const opts = p.webview.options as { enableScripts: boolean; retainContextWhenHidden: boolean; localResourceRoots: { fsPath: string }[] };
    assert.ok(opts.enableScripts && opts.retainContextWhenHidden);
    assert.deepEqual(
      opts.localResourceRoots.map((u) => u.fsPath),
      ["/ext/viewer"],
    );
    GraphPanel.createOrShow(viewerDir, { ...origin, target: "Other" }, ev);
    assert.equal(vs.panels.length, 2);
  });

  it("panels of same-named models of same-named files say which folder (review: both 'MLP · mlp.py')", () => {
    const ev = events();
    GraphPanel.createOrShow(viewerDir, { ...origin, uri: "file:///w/a/models/mlp.py" }, ev);
    GraphPanel.createOrShow(viewerDir, { ...origin, uri: "file:///w/b/models/mlp.py" }, ev);
    GraphPanel.createOrShow(viewerDir, { ...origin, uri: "file:///w/c/mlp.py" }, ev);
    assert.deepEqual(
      vs.panels.map((p) => p.title),
      ["Forward pass: MLP · a/models/mlp.py", "Forward pass: MLP · b/models/mlp.py", "Forward pass: MLP · c/mlp.py"],
    );
  });

  it("panels of same-named models of two files say which file (QA: two tabs both 'Forward pass: MLP')", () => {
    const ev = events();
    const a = GraphPanel.createOrShow(viewerDir, origin, ev);
    assert.equal(a.title, "Forward pass: MLP");
    const b = GraphPanel.createOrShow(viewerDir, { ...origin, uri: "file:///w/other/mlp2.py" }, ev);
    assert.deepEqual(
      vs.panels.map((p) => p.title),
      ["Forward pass: MLP · mlp.py", "Forward pass: MLP · mlp2.py"],
    );
    assert.equal(a.origin.title, "Forward pass: MLP"); // (the model's title, as traced)
    b.retitle("Forward pass: Wide");
    assert.deepEqual(
      vs.panels.map((p) => p.title),
      ["Forward pass: MLP", "Forward pass: Wide"],
    );
    b.retitle("Forward pass: MLP");
    b.dispose();
    assert.equal(vs.panels[0]!.title, "Forward pass: MLP");
    // a class and its instance in one file differ by their target already
    GraphPanel.createOrShow(viewerDir, { ...origin, target: "net", title: "Forward pass: MLP (net)" }, ev);
    assert.deepEqual(
      vs.panels.filter((p) => !p.disposed).map((p) => p.title),
      ["Forward pass: MLP", "Forward pass: MLP (net)"],
    );
  });

  it("sends the graph after the viewer is ready, and again when it reloads", async () => {
    const panel = GraphPanel.createOrShow(viewerDir, origin, events());
    await panel.load(graphFile);
    const w = vs.panels[0]!.webview;
    assert.equal(w.posted.length, 0, "nothing before ready");
    w.receive({ type: "ready" });
    assert.equal(w.posted.length, 1);
    const m = w.posted[0] as { type: string; data: ArrayBuffer; origin: { graphPath: string } };
    assert.equal(m.type, "graph");
    assert.deepEqual([...new Uint8Array(m.data)], [...readFileSync(graphFile)]);
    assert.equal(m.origin.graphPath, graphFile);
    w.receive({ type: "ready" });
    assert.equal(w.posted.length, 2);
    panel.post({ type: "highlightLine", file: "/w/mlp.py", line: 17 });
    assert.deepEqual(w.posted[2], { type: "highlightLine", file: "/w/mlp.py", line: 17 });
  });

  it("passes reveal requests on and ignores unknown messages", () => {
    const ev = events();
    GraphPanel.createOrShow(viewerDir, origin, ev);
    const w = vs.panels[0]!.webview;
    w.receive({ type: "reveal", site: { file: "/w/mlp.py", line: 17 }, nodeId: 3 });
    w.receive({ type: "bogus" });
    assert.deepEqual(ev.revealed, [{ file: "/w/mlp.py", line: 17 }]);
  });

  it("the viewer's Change button asks for another input; the graph goes with the input it was traced with", async () => {
    const ev = events();
    const panel = GraphPanel.createOrShow(viewerDir, origin, ev);
    const w = vs.panels[0]!.webview;
    w.receive({ type: "changeInput" });
    assert.equal(ev.inputChanges, 1);
    panel.setTracedWith({ text: "guessed from Linear(64, …): tensor [1, 64] float32", expr: "torch.randn(1, 64)" }, false);
    await panel.load(graphFile);
    w.receive({ type: "ready" });
    const m = w.posted.at(-1) as { origin: { input?: unknown } };
    assert.deepEqual(m.origin.input, { text: "guessed from Linear(64, …): tensor [1, 64] float32", expr: "torch.randn(1, 64)" });
    panel.setTracedWith(undefined, false);
    assert.equal("input" in panel.origin, false, "a graph file shown as it is: nothing to change");
  });

  it("keeps the viewer's last view (for an HTML export at the same expansion)", () => {
    const panel = GraphPanel.createOrShow(viewerDir, origin, events());
    assert.equal(panel.view, undefined);
    const view = { graph: "m.MLP|3|2", expanded: [0, 2], groups: [], transform: { x: 1, y: 2, k: 1 } };
    vs.panels[0]!.webview.receive({ type: "view", view });
    assert.deepEqual(panel.view, view);
  });

  it("forgets a closed panel", () => {
    GraphPanel.createOrShow(viewerDir, origin, events());
    vs.panels[0]!.dispose();
    assert.equal(GraphPanel.find(origin.uri, origin.target), undefined);
    assert.equal(GraphPanel.active, undefined);
  });

  it("restores after a reload from the origin in the webview state", async () => {
    const ev = events();
    const restored = vs.window.createWebviewPanel("torchscope.graph", "Forward pass: MLP", 1, {});
    const p = await GraphPanel.revive(restored as never, { expanded: [1], groups: [], origin: { ...origin, graphPath: graphFile } }, viewerDir, ev);
    assert.ok(p);
    assert.equal(GraphPanel.find(origin.uri, origin.target), p);
    assert.ok(p!.bytes && p!.bytes.length === 4);
    assert.equal(ev.retraced, 0);
    // The graph file is gone: trace again.
    const gone = vs.window.createWebviewPanel("torchscope.graph", "x", 1, {});
    await GraphPanel.revive(gone as never, { origin: { ...origin, target: "Gone", graphPath: join(dir, "missing") } }, viewerDir, ev);
    assert.equal(ev.retraced, 1);
    // Without an origin there is nothing to restore.
    const empty = vs.window.createWebviewPanel("torchscope.graph", "x", 1, {});
    assert.equal(await GraphPanel.revive(empty as never, undefined, viewerDir, ev), undefined);
    assert.ok(vs.panels.at(-1)!.disposed);
  });
});

describe("visualize command", () => {
  const doc = {
    uri: vs.Uri.file("/w/net.py"),
    languageId: "python",
    getText: () => "class Net(nn.Module): ...",
  };
  const result: TraceResult = {
    path: graphFile,
    size: 4,
    summary: SUMMARY,
  };

  function setup(replies: ((p: Omit<TraceParams, "workDoneToken">) => TraceResult | Promise<TraceResult>)[]) {
    const sent: Omit<TraceParams, "workDoneToken">[] = [];
    const server = fakeServer({
      trace: async (p, _c, progress) => {
        sent.push(p);
        progress("Tracing");
        return replies.shift()!(p);
      },
    });
    vs.window.activeTextEditor = { document: doc, selection: { active: new vs.Position(3, 4) } };
    vs.workspace.documents.set(doc.uri.toString(), doc);
    const { commands: cmds, log } = wiredExtension(server, { storage: dir, toolDir: "/t", viewerDir: "/v" });
    return { cmds, sent, log, server };
  }

  it("traces the target at the cursor with the editor's text and opens its panel", async () => {
    const { cmds, sent } = setup([() => result]);
    const r = await cmds.visualize();
    assert.equal(r, result);
    assert.equal(vs.panels.length, 1, "one panel, opened before the trace and reused");
    assert.deepEqual(sent, [{ uri: doc.uri.toString(), text: doc.getText(), target: "Net" }]);
    assert.equal(vs.panels[0]!.title, "Forward pass: Net");
    const progress = vs.calls.find((c) => c.api === "withProgress")!.args[0] as { cancellable: boolean; location: number };
    assert.ok(progress.cancellable);
    assert.equal(progress.location, vs.ProgressLocation.Notification);
    assert.ok(vs.calls.some((c) => c.api === "progress"));
  });

  it("a click while the server starts opens the panel at once, before the model is named; it becomes the model's", async () => {
    let name!: (t: { target: string; kind: "class"; line: number } | null) => void;
    const { cmds, sent, server } = setup([() => result]);
    Object.assign(server, { running: false, targetAt: () => new Promise((r) => (name = r)) });
    const done = cmds.visualize();
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(vs.panels.length, 1, "the panel is open while the server still looks for the model");
    assert.equal(vs.panels[0]!.title, "Forward pass");
    assert.match(vs.panels[0]!.webview.html, /Starting the language server…/);
    assert.equal(GraphPanel.find(doc.uri.toString(), ""), undefined, "nobody finds an unnamed panel");
    assert.equal(sent.length, 0);
    name({ target: "Net", kind: "class", line: 0 });
    assert.equal(await done, result);
    assert.equal(vs.panels.length, 1, "the same panel shows the graph");
    assert.equal(vs.panels[0]!.title, "Forward pass: Net");
    assert.equal(GraphPanel.find(doc.uri.toString(), "Net")?.title, "Forward pass: Net");
  });

  it("the class and an instance of it (`net = Net()`): two panels, titled apart", async () => {
    const { cmds, server } = setup([() => result, () => result]);
    await cmds.visualize();
    Object.assign(server, { targetAt: async () => ({ target: "net", kind: "instance", line: 9 }) });
    await cmds.visualize();
    assert.deepEqual(
      vs.panels.map((p) => p.title),
      ["Forward pass: Net", "Forward pass: Net (net)"],
    );
  });

  it("a click while the server starts on no model: the quick pick, and the early panel closes if none is picked", async () => {
    const { cmds, server } = setup([]);
    Object.assign(server, { running: false, targetAt: async () => null, targets: async () => [{ target: "Net", kind: "class", line: 0 }] });
    vs.answers.push(undefined);
    assert.equal(await cmds.visualize(), undefined);
    assert.equal(vs.panels.length, 1);
    assert.ok(vs.panels[0]!.disposed, "the early panel is closed");
  });

  it("a click while the server starts, in a file with a panel open: that panel, no other opens", async () => {
    const { cmds, server } = setup([() => result, () => result]);
    await cmds.visualize();
    Object.assign(server, { running: false });
    assert.equal(await cmds.visualize(), result);
    assert.equal(vs.panels.length, 1, "no early panel, not even for a moment");
    assert.ok(!vs.panels[0]!.disposed);
  });

  it("a click while the server starts whose model gets a panel meanwhile: a trace that fails closes only the early panel", async () => {
    const { cmds, server } = setup([fail("model-error")]);
    let named: GraphPanel | undefined;
    Object.assign(server, {
      running: false,
      targetAt: async () => {
        // the model's own panel appears while the early one waits (a second click's trace)
        named = GraphPanel.createOrShow(viewerDir, { uri: doc.uri.toString(), target: "Net", title: "Forward pass: Net" }, events());
        return { target: "Net", kind: "class", line: 0 };
      },
    });
    await cmds.visualize();
    assert.equal(vs.panels.length, 2);
    assert.ok(vs.panels[0]!.disposed, "the early panel closes");
    assert.ok(!vs.panels[1]!.disposed, "the model's own panel stays, though its trace failed");
    assert.equal(GraphPanel.find(doc.uri.toString(), "Net"), named);
  });

  it("an unnamed panel claimed by a model that has a panel: that one comes forward, the unnamed one closes", () => {
    const ev = events();
    const named = GraphPanel.createOrShow(viewerDir, { uri: "file:///w/net.py", target: "Net", title: "Forward pass: Net" }, ev);
    const unnamed = GraphPanel.openUnnamed(viewerDir, "file:///w/net.py", ev, "Starting…");
    assert.equal(unnamed.claim("Net", "Forward pass: Net"), named);
    assert.ok(vs.panels[1]!.disposed && !vs.panels[0]!.disposed);
    assert.equal(GraphPanel.all().length, 1);
  });

  it("asks for an input on needs-input, retries with it, and remembers it for next time", async () => {
    const withInput = (p: Omit<TraceParams, "workDoneToken">) => {
      assert.equal(p.input, "torch.randn(1, 8)");
      return result;
    };
    const { cmds, sent } = setup([fail("needs-input"), withInput, () => result]);
    vs.answers.push("torch.randn(1, 8)");
    assert.equal(await cmds.visualize(), result);
    assert.equal(sent.length, 2);
    assert.equal(await cmds.visualize(), result);
    assert.equal(sent[2]!.input, "torch.randn(1, 8)");
    assert.equal(vs.calls.filter((c) => c.api === "showInputBox").length, 1);
  });

  it("asks for constructor arguments when the constructor needs them", async () => {
    const { cmds, sent } = setup([fail("target-error", { needsCtorArgs: true }), () => result]);
    vs.answers.push("10, hidden=64");
    await cmds.visualize({ uri: doc.uri.toString(), target: "Net" });
    assert.equal(sent[1]!.ctorArgs, "10, hidden=64");
  });

  it("the constructor's box shows the parameters the class takes as its placeholder", async () => {
    // it showed a made-up "10, hidden=64" for Encoder(d_in, d_hidden, n_layers)
    const { cmds } = setup([fail("target-error", { needsCtorArgs: true, ctorParams: "d_in, d_hidden, n_layers=2" }), () => result]);
    vs.answers.push("4, 8");
    await cmds.visualize({ uri: doc.uri.toString(), target: "Net" });
    const box = vs.calls.find((c) => c.api === "showInputBox")!.args[0] as { placeHolder?: string };
    assert.equal(box.placeHolder, "d_in, d_hidden, n_layers=2");
  });

  it("starts the constructor's box with the arguments the file itself passes, as written", async () => {
    const { cmds, sent } = setup([fail("target-error", { needsCtorArgs: true, guess: "len(vocab), dim=args.dim" }), () => result]);
    vs.answers.push("50257, dim=64");
    await cmds.visualize({ uri: doc.uri.toString(), target: "Net" });
    const box = vs.calls.find((c) => c.api === "showInputBox")!.args[0] as { value?: string; title?: string };
    assert.equal(box.value, "len(vocab), dim=args.dim");
    assert.equal(box.title, "Arguments to build Net");
    assert.equal(sent[1]!.ctorArgs, "50257, dim=64");
  });

  it("stops when the input box is dismissed", async () => {
    const { cmds, sent } = setup([fail("needs-input")]);
    vs.answers.push(undefined);
    assert.equal(await cmds.visualize(), undefined);
    assert.equal(sent.length, 1);
    assert.equal(GraphPanel.all().length, 0, "the panel opened for the trace is closed again");
    assert.ok(vs.panels.every((p) => p.disposed));
  });

  it("offers a way to another interpreter when torch is missing", async () => {
    const { cmds } = setup([fail("no-torch", { details: "/usr/bin/python3" })]);
    await cmds.visualize();
    assert.equal(GraphPanel.all().length, 0);
    const msg = vs.calls.find((c) => c.api === "showErrorMessage")!;
    assert.match(String(msg.args[0]), /no-torch happened/);
    assert.ok(msg.args.includes("Set torchscope.pythonPath"));
  });

  it("puts an import error's traceback in the log", async () => {
    const { cmds, log } = setup([fail("import-error", { details: "Traceback: SyntaxError at line 3" })]);
    await cmds.visualize();
    assert.ok(log.lines.some((l) => l.includes("SyntaxError at line 3")));
    assert.ok(vs.calls.find((c) => c.api === "showErrorMessage")!.args.includes("Show Details"));
  });

  it("shows the partial graph of a model that raises and names the error", async () => {
    const raised = {
      ...result,
      summary: { ...result.summary, error: { type: "RuntimeError", message: "shapes cannot be multiplied", file: null, line: null } },
    };
    const { cmds } = setup([() => raised]);
    await cmds.visualize();
    assert.equal(vs.panels.length, 1);
    const warn = vs.calls.find((c) => c.api === "showWarningMessage")!;
    assert.match(String(warn.args[0]), /raised RuntimeError: shapes cannot be multiplied/);
  });

  it("re-traces an open panel quietly when its file is saved, if the setting says so", async () => {
    const { cmds, sent } = setup([() => result, () => result]);
    const subs = cmds.register();
    await cmds.visualize();
    vs.workspace.saved.fire(doc);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(sent.length, 1, "off by default");
    vs.settings.set("torchscope.retraceOnSave", true);
    vs.workspace.saved.fire({ ...doc, uri: vs.Uri.file("/w/other.py") });
    vs.workspace.saved.fire(doc);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(sent.length, 2, "only the saved file's panel");
    const progress = vs.calls.filter((c) => c.api === "withProgress").at(-1)!.args[0] as { location: number; cancellable: boolean };
    assert.equal(progress.location, vs.ProgressLocation.Window);
    assert.equal(vs.panels.length, 1, "the same panel");
    for (const d of subs) d.dispose();
  });

  it("registers every command the manifest contributes, and menus name only those", () => {
    const { cmds } = setup([]);
    const subs = cmds.register();
    const manifest = JSON.parse(readFileSync(join(__dirname, "..", "..", "..", "package.json"), "utf8")) as {
      main: string;
      activationEvents: string[];
      contributes: {
        commands: { command: string }[];
        menus: Record<string, { command?: string; submenu?: string }[]>;
        submenus?: { id: string; label: string }[];
      };
    };
    const declared = manifest.contributes.commands.map((c) => c.command).sort();
    const mine = [...vs.commands.registered.keys()];
    for (const id of mine) assert.ok(declared.includes(id), `${id} is declared`);
    // Commands of the other rooms (the debug bridge) are registered there.
    const src = join(__dirname, "..", "..", "..", "extension", "src");
    const others = readdirSync(src)
      .filter((f) => f !== "commands.ts")
      .map((f) => readFileSync(join(src, f), "utf8"))
      .join("\n");
    for (const id of declared) assert.ok(mine.includes(id) || others.includes(`"${id}"`), `${id} is registered`);
    // A submenu is declared, and its items are listed as a menu of their own.
    const submenus = (manifest.contributes.submenus ?? []).map((s) => s.id);
    for (const [menu, items] of Object.entries(manifest.contributes.menus)) {
      for (const i of items) {
        if (i.submenu) assert.ok(submenus.includes(i.submenu) && manifest.contributes.menus[i.submenu], `${menu}: submenu ${i.submenu} is declared`);
        else assert.ok(declared.includes(i.command!), `${menu}: ${i.command} is declared`);
      }
    }
    assert.equal(manifest.main, "./extension/dist/extension.js");
    // A restored panel activates the extension too (its serializer), with or without a Python editor.
    assert.deepEqual(manifest.activationEvents, ["onLanguage:python", "onWebviewPanel:torchscope.graph"]);
    for (const d of subs) d.dispose();
  });

  it("says what to do when no model is at the cursor", async () => {
    const { cmds, sent } = setup([]);
    (cmds as unknown as { deps: { client: Server } }).deps.client.targetAt = async () => null;
    await cmds.visualize();
    assert.equal(sent.length, 0);
    assert.match(String(vs.calls.find((c) => c.api === "showInformationMessage")!.args[0]), /put the cursor inside an nn.Module class/);
  });
});
