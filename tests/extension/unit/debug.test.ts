// Tracing at a breakpoint, the extension's side without VS Code: the evaluate expression
// (checked against the Python entry's own `loader_expression` and run by Python on paths
// with quotes and backslashes), reply parsing, candidate rows, chunk reassembly and the
// remote-attach fallback against a fake debug session.
// First: vscode.debug on the stub before the extension's modules load.
import { fakeDebug, sessionEnded, stackItemChanged } from "./debug-fake";
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { afterEach, beforeEach, describe, it } from "node:test";
import * as vs from "./vscode-stub";
import { GraphPanel } from "../../../extension/src/graphPanel";
import {
  DebugBridge,
  DebugError,
  MAX_CHUNK,
  NOT_SHIPPED,
  SHIPPED_MSGPACK,
  candidateItems,
  evaluateArgs,
  loaderExpression,
  parseReply,
  pyString,
  shippedFiles,
  shipExpression,
  readChunked,
  requestExpression,
  type Candidate,
  type ChunkReply,
  type DebugRequest,
  type ErrorReply,
} from "../../../extension/src/debugBridge";
import { variableExpression } from "../../../extension/src/debugCommands";
import { wire } from "../../../extension/src/extension";
import { DEBUG_URI } from "../../../extension/src/pausedSource";
import { modelName } from "../../../extension/src/protocol";
import { fakeServer, messages, resetWiring } from "./wiring";

const ROOT = resolve(__dirname, "..", "..", "..");
const PYTHON = process.env.TORCHSCOPE_PYTHON ?? join(ROOT, ".venv", "bin", "python");
const DEBUG_PY = join(ROOT, "python_helper", "torchscope", "debug.py");
const havePython = existsSync(PYTHON);
const tmp = mkdtempSync(join(tmpdir(), "torchscope-debug-unit-"));

function py(code: string, ...args: string[]): string {
  const r = spawnSync(PYTHON, ["-c", code, ...args], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

/** The request a fake debuggee receives: the string literal inside `.handle(...)`. */
function requestOf(expression: string): DebugRequest {
  const m = /\.handle\(("(?:[^"\\]|\\.)*")\)$/.exec(expression);
  assert.ok(m, "the expression ends in .handle(<JSON string literal>)");
  return JSON.parse(JSON.parse(m[1]!) as string) as DebugRequest;
}

const NASTY = `/tmp/we"ird\\dir/it's ünïcode ☃/debug.py`;

describe("the evaluate expression", () => {
  it("quotes a string as Python's json.dumps does (ASCII only)", () => {
    assert.equal(pyString(`a"b\\c'd`), `"a\\"b\\\\c'd"`);
    assert.equal(pyString("é☃\u{1F600}\n\t"), '"\\u00e9\\u2603\\ud83d\\ude00\\n\\t"');
  });

  it("is the Python entry's loader_expression, character for character", { skip: !havePython && "no venv python" }, () => {
    for (const p of [DEBUG_PY, NASTY, "C:\\Users\\me\\ext\\debug.py"]) {
      const expected = py(
        "import importlib.util,sys\n" +
          "s=importlib.util.spec_from_file_location('d', sys.argv[1]); m=importlib.util.module_from_spec(s); s.loader.exec_module(m)\n" +
          "sys.stdout.write(m.loader_expression(sys.argv[2]))",
        DEBUG_PY,
        p,
      );
      assert.equal(loaderExpression(p), expected);
    }
  });

  it("sends the helper as the Python entry's ship_expression does, character for character", { skip: !havePython && "no venv python" }, async () => {
    const files = { "debug.py": `x = "é☃"\n`, "tracer.py": `s = 'a\\b "q"'\n`, "msgpack/fallback.py": "# m\n" };
    const expected = py(
      "import importlib.util,json,sys\n" +
        "s=importlib.util.spec_from_file_location('d', sys.argv[1]); m=importlib.util.module_from_spec(s); s.loader.exec_module(m)\n" +
        "f=json.loads(sys.argv[3]); sys.stdout.write(json.dumps([m.ship_expression(sys.argv[2], f['debug.py'], f), list(m.NOT_SHIPPED), list(m.SHIPPED_MSGPACK), m.shipped_files()]))",
      DEBUG_PY,
      NASTY,
      JSON.stringify(files),
    );
    assert.deepEqual(JSON.parse(expected), [
      shipExpression(NASTY, files["debug.py"], files),
      NOT_SHIPPED,
      SHIPPED_MSGPACK,
      await shippedFiles(dirname(DEBUG_PY)),
    ]);
  });

  it("round-trips a request with quotes, backslashes and non-ASCII", () => {
    const req: DebugRequest = {
      op: "trace",
      expr: `nets["g"]`,
      out: NASTY,
      input: `torch.randn(2, 3) # "é" \\ '`,
      timeBudget: 5,
      cancelFile: `${NASTY}.cancel`,
    };
    const e = requestExpression(req, NASTY);
    assert.ok(e.startsWith(loaderExpression(NASTY)));
    assert.deepEqual(requestOf(e), req);
    assert.ok(/^[\x20-\x7e]*$/.test(e), "one line of printable ASCII");
  });

  it("asks for the whole string on the selected frame", () => {
    const a = evaluateArgs({ op: "candidates" }, DEBUG_PY, 7);
    assert.equal(a.context, "clipboard");
    assert.deepEqual(a.format, { rawString: true });
    assert.equal(a.frameId, 7);
    assert.ok(!("frameId" in evaluateArgs({ op: "candidates" }, DEBUG_PY, undefined)));
  });

  it("runs in Python from a folder with quotes and backslashes in its name", { skip: !havePython && "no venv python" }, () => {
    // debug.py alone loads by path; read_chunk and remove need nothing but the standard library.
    const dir = join(tmp, `we"ird\\dir it's`);
    mkdirSync(dir, { recursive: true });
    const entry = join(dir, "debug.py");
    copyFileSync(DEBUG_PY, entry);
    const data = join(dir, `gr"aph\\'s.msgpack`);
    writeFileSync(data, Buffer.from("hello, graph"));
    const read = requestExpression({ op: "read_chunk", path: data, offset: 0, size: MAX_CHUNK }, entry);
    const remove = requestExpression({ op: "remove", path: data }, entry);
    const out = py(`import sys\nprint(eval(sys.argv[1]))\nprint(eval(sys.argv[2]))\nprint(eval(sys.argv[2]))`, read, remove);
    const [r1, r2, r3] = out
      .trim()
      .split("\n")
      .map((l) => parseReply(l));
    assert.ok(r1!.ok && r2!.ok && r3!.ok);
    const chunk = r1 as unknown as ChunkReply;
    assert.equal(Buffer.from(chunk.data, "base64").toString(), "hello, graph");
    assert.equal(chunk.eof, true);
    assert.equal((r2 as unknown as { removed: boolean }).removed, true);
    assert.equal((r3 as unknown as { removed: boolean }).removed, false);
    assert.ok(!existsSync(data));
  });
});

describe("replies", () => {
  it("parses ok and error replies", () => {
    assert.deepEqual(parseReply('{"ok": true, "modules": [], "more": 0}'), { ok: true, modules: [], more: 0 });
    const e = parseReply('{"ok": false, "kind": "needs-input", "error": "no input for Block", "traceback": null}') as ErrorReply;
    assert.deepEqual(e, { ok: false, kind: "needs-input", error: "no input for Block", traceback: null });
  });

  it("undoes a repr when the adapter ignored rawString", () => {
    const r = parseReply(`'{"ok": true, "path": "C:\\\\\\\\x\\\\\\\\g.msgpack", "note": "it\\'s"}'`);
    assert.ok(r.ok);
    assert.equal((r as { path?: string }).path, "C:\\\\x\\\\g.msgpack".replace(/\\\\/g, "\\"));
    assert.equal((r as { note?: string }).note, "it's");
  });

  it("turns anything else into a bad-reply error, never a throw", () => {
    for (const x of [
      undefined,
      42,
      "",
      "Traceback (most recent call last):\n  File ...\nNameError: name 'x' is not defined",
      '{"ok": true, "path": "/tm',
      "[1, 2]",
    ]) {
      const r = parseReply(x) as ErrorReply;
      assert.equal(r.ok, false);
      assert.equal(r.kind, "bad-reply");
    }
    const r = parseReply("Traceback (most recent call last):\nFileNotFoundError: x") as ErrorReply;
    assert.match(r.error, /Traceback/);
    assert.match(r.traceback ?? "", /FileNotFoundError/);
  });

  it("keeps an unknown error kind and a missing message readable", () => {
    const r = parseReply('{"ok": false}') as ErrorReply;
    assert.equal(r.kind, "internal");
    assert.equal(r.error, "unknown error");
  });
});

describe("candidates", () => {
  const c = (o: Partial<Candidate>): Candidate => ({
    expr: "m",
    name: "m",
    cls: "MLP",
    qualname: "x.MLP",
    params: 0,
    reason: "",
    inputs: false,
    input: null,
    ...o,
  });
  const modules = [
    c({
      expr: "self",
      name: "self",
      cls: "Block",
      params: 7_087_872,
      reason: "paused in its forward",
      inputs: true,
      input: "paused call (tensor [1, 64, 768] float32)",
    }),
    c({ expr: "model", name: "model", cls: "GPT2Model", params: 124_439_808, reason: "local", inputs: false }),
    c({
      expr: "@stack:2",
      name: "Encoder",
      cls: "Encoder",
      params: 999,
      reason: "its forward is on the stack",
      inputs: true,
      input: "paused call (tensor [2, 8] float32)",
    }),
  ];

  it("keeps the entry's order (likeliest first) and says where the input comes from", () => {
    const items = candidateItems(modules);
    assert.deepEqual(
      items.map((i) => i.label),
      ["self", "model", "Encoder"],
    );
    assert.equal(items[0]!.description, "Block · 7.1M params");
    assert.equal(items[0]!.detail, "paused in its forward — input: paused call (tensor [1, 64, 768] float32)");
    assert.equal(items[1]!.description, "GPT2Model · 124.4M params"); // the one format (tests/webview/unit/count.test.ts)
    assert.match(items[1]!.detail, /^local — input unknown/);
    assert.equal(items[2]!.candidate.expr, "@stack:2");
  });

  it("names the panel after the class", () => {
    assert.equal(modelName({ model: "GPT2Model" }, "self"), "GPT2Model");
    assert.equal(modelName({ model: "transformers.GPT2Model" }, "self"), "GPT2Model");
    assert.equal(modelName(undefined, "self.model"), "model");
    assert.equal(modelName({ model: "" }, 'nets["g.x"]'), 'nets["g.x"]');
  });

  it("takes a Variables-view variable's evaluateName", () => {
    assert.deepEqual(
      variableExpression({ sessionId: "s", container: {}, variable: { name: "model", evaluateName: "self.model", value: "GPT2Model(...)" } }),
      { expr: "self.model", name: "model" },
    );
    assert.equal(variableExpression({ variable: { name: "x" } }), undefined);
    assert.equal(variableExpression(undefined), undefined);
  });
});

/** A file served in chunks as the entry's read_chunk does. */
function server(bytes: Buffer, tweak?: (r: ChunkReply, call: number) => ChunkReply | ErrorReply) {
  const asked: { offset: number; size: number }[] = [];
  const read = async (offset: number, size: number): Promise<ChunkReply | ErrorReply> => {
    asked.push({ offset, size });
    const n = Math.min(size, MAX_CHUNK);
    const data = bytes.subarray(offset, offset + n);
    const r: ChunkReply = {
      ok: true,
      data: data.toString("base64"),
      offset,
      size: data.length,
      total: bytes.length,
      eof: offset + data.length >= bytes.length,
    };
    return tweak ? tweak(r, asked.length) : r;
  };
  return { read, asked };
}

describe("chunked transfer", () => {
  const big = Buffer.alloc(10 * 1024 * 1024 + 123);
  for (let i = 0; i < big.length; i += 4096) big[i] = (i / 4096) & 0xff;
  big[big.length - 1] = 0x5a;

  it("reassembles a 10 MB file from ≤ 4 MiB chunks, in order", async () => {
    const s = server(big);
    const got = await readChunked(s.read);
    assert.equal(Buffer.compare(Buffer.from(got), big), 0);
    assert.deepEqual(
      s.asked.map((a) => a.offset),
      [0, MAX_CHUNK, 2 * MAX_CHUNK],
    );
    assert.ok(s.asked.every((a) => a.size <= MAX_CHUNK));
  });

  it("never asks for more than 4 MiB, whatever it is told", async () => {
    const s = server(big);
    await readChunked(s.read, 64 * 1024 * 1024);
    assert.ok(s.asked.every((a) => a.size === MAX_CHUNK));
  });

  it("copes with short chunks and an empty file", async () => {
    const s = server(big.subarray(0, 1000), (r) => r);
    assert.equal((await readChunked(s.read, 300)).byteLength, 1000);
    assert.deepEqual(
      s.asked.map((a) => a.offset),
      [0, 300, 600, 900],
    );
    assert.equal((await readChunked(server(Buffer.alloc(0)).read)).byteLength, 0);
  });

  it("fails on a gap, a wrong size or an error reply", async () => {
    await assert.rejects(readChunked(server(big, (r, n) => (n === 2 ? { ...r, offset: r.offset + 1 } : r)).read), /expected/);
    await assert.rejects(readChunked(server(big, (r) => ({ ...r, size: r.size + 1 })).read), /said/);
    await assert.rejects(
      readChunked(server(big, (r, n) => (n === 2 ? { ok: false, kind: "internal", error: "gone" } : r)).read),
      (e: unknown) => e instanceof DebugError && e.kind === "internal",
    );
    await assert.rejects(readChunked(server(big, (r, n) => (n === 2 ? { ...r, data: "", size: 0, eof: false } : r)).read), /empty chunk/);
  });
});

describe("the bridge against a fake session", () => {
  function fakeSession(files: Map<string, Buffer>, replies: Partial<Record<DebugRequest["op"], unknown>> = {}) {
    const seen: { command: string; args: Record<string, unknown>; request: DebugRequest }[] = [];
    const session = {
      id: "s1",
      type: "debugpy",
      name: "Python: nested.py",
      customRequest: async (command: string, args: Record<string, unknown>) => {
        const request = requestOf(args.expression as string);
        seen.push({ command, args, request });
        if (request.op === "read_chunk") {
          const b = files.get(request.path)!;
          const d = b.subarray(request.offset, request.offset + request.size);
          return {
            result: JSON.stringify({
              ok: true,
              data: d.toString("base64"),
              offset: request.offset,
              size: d.length,
              total: b.length,
              eof: request.offset + d.length >= b.length,
            }),
          };
        }
        if (request.op === "remove") return { result: JSON.stringify({ ok: files.delete(request.path) || true, removed: true }) };
        if (request.op in replies) return { result: JSON.stringify(replies[request.op]) };
        throw new Error("not paused");
      },
    };
    return { session, seen };
  }

  it("sends one evaluate per request on the frame and parses the reply", async () => {
    const { session, seen } = fakeSession(new Map(), { candidates: { ok: true, modules: [], more: 0 } });
    const b = new DebugBridge({ session: session as never, frameId: 3 }, DEBUG_PY);
    assert.deepEqual(await b.request({ op: "candidates" }), { ok: true, modules: [], more: 0 });
    assert.equal(seen[0]!.command, "evaluate");
    assert.equal(seen[0]!.args.frameId, 3);
  });

  it("an evaluate the debugger refuses is an evaluate-failed reply", async () => {
    const { session } = fakeSession(new Map());
    const r = await new DebugBridge({ session: session as never, frameId: 3 }, DEBUG_PY).request({ op: "poll", out: "/x" });
    assert.deepEqual(r, { ok: false, kind: "evaluate-failed", error: "not paused" });
  });

  it("a debuggee that can't load debug.py from here gets its sources, then the request again", async () => {
    // The extension's layout: bundled/tool/torchscope/*.py and bundled/libs/msgpack/*.py.
    const tool = join(tmp, "bundled", "tool", "torchscope");
    const libs = join(tmp, "bundled", "libs", "msgpack");
    mkdirSync(tool, { recursive: true });
    mkdirSync(libs, { recursive: true });
    const shipped = await shippedFiles(dirname(DEBUG_PY));
    for (const f of shipped) writeFileSync(join(tool, f), readFileSync(join(dirname(DEBUG_PY), f)));
    for (const f of SHIPPED_MSGPACK) writeFileSync(join(libs, f), `# msgpack ${f}\n`);
    const debugPy = join(tool, "debug.py");
    const sent: string[] = [];
    let loaded = false;
    const session = {
      customRequest: async (_: string, args: Record<string, unknown>) => {
        const e = args.expression as string;
        sent.push(e.startsWith("(lambda m, s=") ? "ship" : requestOf(e).op);
        if (e.startsWith("(lambda m, s=")) {
          assert.equal(
            e,
            shipExpression(
              debugPy,
              readFileSync(debugPy, "utf8"),
              Object.fromEntries([
                ...shipped.map((f) => [f, readFileSync(join(tool, f), "utf8")]),
                ...SHIPPED_MSGPACK.map((f) => [`msgpack/${f}`, `# msgpack ${f}\n`]),
              ]),
            ),
          );
          assert.equal(args.frameId, 4);
          loaded = true;
          return { result: JSON.stringify({ ok: true, files: shipped.length + SHIPPED_MSGPACK.length }) };
        }
        return { result: loaded ? JSON.stringify({ ok: true, modules: [], more: 0 }) : "FileNotFoundError(2, 'No such file or directory')" };
      },
    };
    const r = await new DebugBridge({ session: session as never, frameId: 4 }, debugPy).request({ op: "candidates" });
    assert.deepEqual(r, { ok: true, modules: [], more: 0 });
    assert.deepEqual(sent, ["candidates", "ship", "candidates"]);
    // Loaded already (a second bridge on the same debuggee): nothing is sent again.
    sent.length = 0;
    await new DebugBridge({ session: session as never, frameId: 4 }, debugPy).request({ op: "candidates" });
    assert.deepEqual(sent, ["candidates"]);
  });

  it("when the sources can't be loaded either, the reply says the helper is missing", async () => {
    const session = { customRequest: async () => ({ result: "FileNotFoundError(2, 'No such file or directory')" }) };
    const r = await new DebugBridge({ session: session as never, frameId: 1 }, join(tmp, "nowhere", "debug.py")).request({ op: "candidates" });
    assert.ok(!r.ok && r.kind === "bad-reply" && /FileNotFoundError/.test(r.traceback ?? ""), JSON.stringify(r));
  });

  it("remote attach: a graph that is not here comes through read_chunk and is removed there", async () => {
    const remote = "/remote/graphs/g.msgpack";
    const bytes = Buffer.concat([big9(), Buffer.from("end")]);
    const files = new Map([[remote, bytes]]);
    const { session, seen } = fakeSession(files);
    const local = join(tmp, "local", "g.msgpack");
    const how = await new DebugBridge({ session: session as never, frameId: 1 }, DEBUG_PY).fetchGraph(remote, local);
    assert.equal(how, "fetched");
    assert.equal(Buffer.compare(readFileSync(local), bytes), 0);
    assert.deepEqual(
      seen.map((s) => s.request.op),
      ["read_chunk", "read_chunk", "read_chunk", "remove"],
    );
    // Already here (the debuggee runs on this machine): nothing is sent.
    const again = fakeSession(files);
    assert.equal(await new DebugBridge({ session: again.session as never, frameId: 1 }, DEBUG_PY).fetchGraph(remote, local), "local");
    assert.equal(again.seen.length, 0);
  });
});

function big9(): Buffer {
  const b = Buffer.alloc(9 * 1024 * 1024);
  for (let i = 0; i < b.length; i += 1000) b[i] = 7;
  return b;
}

// ---- the commands' flow against a fake paused session ------------------------------------

type Handler = (req: DebugRequest) => unknown;

function pausedSession(handler: Handler, type = "debugpy") {
  const requests: DebugRequest[] = [];
  const session = {
    id: "s1",
    type,
    name: "Debug nested.py",
    customRequest: async (command: string, args: Record<string, unknown>) => {
      assert.equal(command, "evaluate");
      assert.equal(args.frameId, 5);
      const req = requestOf(args.expression as string);
      requests.push(req);
      return { result: JSON.stringify(handler(req)) };
    },
  };
  fakeDebug.activeDebugSession = session;
  fakeDebug.activeStackItem = { session, threadId: 1, frameId: 5 };
  return { session, requests };
}

const GRAPH = Buffer.from([0x81, 0xa1, 0x61, 0x01]);
const summary = { model: "Block", nodes: 3, edges: 2, ops: 1, trace_ms: 2, input: "paused call", error: null };
const block: Candidate = {
  expr: "self",
  name: "self",
  cls: "Block",
  qualname: "m.Block",
  params: 10,
  reason: "paused in its forward",
  inputs: true,
  input: "paused call",
};

/** The extension's wiring with no language server: the paused-frame commands and the flow. */
function wired() {
  const storage = mkdtempSync(join(tmpdir(), "torchscope-debug-storage-"));
  const noServer = fakeServer({
    python: undefined,
    targetAt: async () => null,
    trace: async () => Promise.reject(new Error("no server")),
    compare: async () => Promise.reject(new Error("no server")),
  });
  const memento = { get: (_k: string, d: unknown) => d, update: async () => undefined };
  return wire(
    { globalStorageUri: vs.Uri.file(storage), workspaceState: memento } as never,
    noServer,
    { toolDir: "/ext/bundled/tool", libsDir: undefined, viewerDir: "/ext/viewer" },
    vs.logChannel() as never,
  );
}

function commands() {
  return wired().debug;
}

/** withProgress whose Cancel the test can press. */
const cancelNow: { press?: () => void } = {};
const stubWithProgress = vs.window.withProgress;

describe("the commands against a fake paused session", () => {
  beforeEach(() => {
    resetWiring();
    (vs.window as Record<string, unknown>).withProgress = (opts: unknown, task: (p: unknown, t: unknown) => Promise<unknown>) => {
      vs.calls.push({ api: "withProgress", args: [opts] });
      const cancel = new vs.EventEmitter<void>();
      cancelNow.press = () => cancel.fire();
      return task(
        { report: (v: unknown) => vs.calls.push({ api: "progress", args: [v] }) },
        { isCancellationRequested: false, onCancellationRequested: cancel.event },
      );
    };
  });
  afterEach(() => {
    (vs.window as Record<string, unknown>).withProgress = stubWithProgress;
  });

  it("not debugging, or not a Python session: a message, no evaluate", async () => {
    await commands().visualizePausedFrame();
    assert.match(messages("showInformationMessage")[0]!, /start debugging a Python program/);
    const { requests } = pausedSession(() => ({ ok: true }), "node");
    await commands().visualizePausedFrame();
    assert.match(messages("showInformationMessage")[1]!, /is a node debug session/);
    assert.equal(requests.length, 0);
  });

  it("can be run while the program runs, to say so (the palette hid it then)", () => {
    const manifest = JSON.parse(readFileSync(join(__dirname, "..", "..", "..", "package.json"), "utf8"));
    const command = manifest.contributes.commands.find((c: { command: string }) => c.command === "torchscope.visualizePausedFrame");
    assert.equal(command.enablement, "inDebugMode");
  });

  it("running (a thread with no frames): asks to pause", async () => {
    const { session } = pausedSession(() => ({ ok: true }));
    session.customRequest = async () => {
      throw new Error("Thread is not paused");
    };
    fakeDebug.activeStackItem = { session, threadId: 1 };
    await commands().visualizePausedFrame();
    assert.match(messages("showInformationMessage")[0]!, /the program is running; pause it/);
  });

  it("candidates → the first picked → trace with out, cancel file and time budget → the panel", async () => {
    vs.settings.set("torchscope.traceTimeoutSeconds", 12);
    const { requests } = pausedSession((req) => {
      if (req.op === "candidates") return { ok: true, modules: [block], more: 0 };
      if (req.op === "trace") {
        writeFileSync(req.out, GRAPH);
        return { ok: true, path: req.out, size: GRAPH.length, summary, elapsed_ms: 3 };
      }
      return { ok: false, kind: "bad-request", error: req.op };
    });
    vs.answers.push(candidateItems([block])[0]);
    await commands().visualizePausedFrame();
    // `warm` while the list is shown: the tracer's imports before the pick, and the read-ahead
    // for the model listed first (its input known).
    assert.deepEqual(
      requests.map((r) => r.op),
      ["candidates", "warm", "trace"],
    );
    assert.deepEqual(requests[1], { op: "warm", expr: "self" });
    const t = requests[2] as Extract<DebugRequest, { op: "trace" }>;
    assert.equal(t.expr, "self");
    assert.equal(t.timeBudget, 12);
    assert.equal(t.cancelFile, `${t.out}.cancel`);
    assert.ok(!("input" in t));
    const panel = GraphPanel.find(DEBUG_URI, "self")!;
    assert.ok(panel, "a panel for the paused frame's self");
    assert.equal(panel.title, "Forward pass: Block");
    assert.equal(panel.origin.graphPath, t.out);
    assert.deepEqual([...panel.bytes!], [...GRAPH]);
    assert.equal(messages("showErrorMessage").length, 0);
  });

  it("Re-trace of a paused-frame panel traces the same expression in the frame paused now", async () => {
    const { requests } = pausedSession((req) => {
      if (req.op === "candidates") return { ok: true, modules: [block], more: 0 };
      if (req.op === "trace") {
        writeFileSync(req.out, GRAPH);
        return { ok: true, path: req.out, size: GRAPH.length, summary, elapsed_ms: 3 };
      }
      return { ok: false, kind: "bad-request", error: req.op };
    });
    vs.answers.push(candidateItems([block])[0]);
    const { debug, flow } = wired();
    await debug.visualizePausedFrame();
    await flow.retrace(GraphPanel.find(DEBUG_URI, "self")!);
    assert.deepEqual(
      requests.map((r) => r.op),
      ["candidates", "warm", "trace", "trace"],
    );
    assert.equal((requests[2] as Extract<DebugRequest, { op: "trace" }>).expr, "self");
    assert.equal(messages("showWarningMessage").length, 0, "no “can't be opened” warning");
  });

  it("the panel opens before the models are listed and becomes the picked one's, whichever; closed again on Escape", async () => {
    const net: Candidate = { ...block, expr: "net", name: "net", cls: "Net" };
    const { requests } = pausedSession((req) => {
      if (req.op === "candidates") return { ok: true, modules: [block, net], more: 0 };
      if (req.op === "trace") {
        writeFileSync(req.out, GRAPH);
        return { ok: true, path: req.out, size: 4, summary: { ...summary, model: "Net" } };
      }
      return { ok: false, kind: "bad-request", error: req.op };
    });
    let openWhileListing = 0;
    let openWhilePicking = 0;
    const open = () => vs.panels.filter((p) => !p.disposed).length;
    const quickPick = vs.window.showQuickPick;
    (vs.window as Record<string, unknown>).showQuickPick = (...args: unknown[]) => {
      openWhilePicking = open();
      return quickPick(...args);
    };
    type Session = { customRequest: (c: string, a: unknown) => Promise<unknown> };
    const { session } = fakeDebug.activeStackItem as { session: Session };
    const request = session.customRequest.bind(session);
    session.customRequest = (command, args) => {
      if (command === "evaluate" && JSON.stringify(args).includes("candidates")) openWhileListing = Math.max(openWhileListing, open());
      return request(command, args);
    };
    try {
      await commands().visualizePausedFrame(); // Escape
      assert.equal(openWhileListing, 1, "the panel is open while the frame's models are listed");
      assert.equal(openWhilePicking, 1);
      assert.equal(GraphPanel.all().length, 0);
      assert.equal(open(), 0, "Escape closed it");
      vs.answers.push(candidateItems([net])[0]);
      await commands().visualizePausedFrame(); // the second of the list
    } finally {
      (vs.window as Record<string, unknown>).showQuickPick = quickPick;
    }
    assert.deepEqual(
      GraphPanel.all().map((p) => p.origin.target),
      ["net"],
    );
    assert.equal(vs.panels.length, 2, "the panel opened before the pick shows the second model's graph");
    assert.equal(GraphPanel.find(DEBUG_URI, "net")!.title, "Forward pass: Net");
    assert.equal(requests.filter((r) => r.op === "trace").length, 1);
    // The same breakpoint again, its panel open: no other panel opens (not even for a moment).
    vs.answers.push(candidateItems([net])[0]);
    await commands().visualizePausedFrame();
    assert.equal(vs.panels.length, 2, "the open paused-frame panel is reused, no new webview");
    assert.equal(requests.filter((r) => r.op === "trace").length, 2);
  });

  it("Cancel writes the cancel file the trace checks; a cancelled trace is no message and no panel", async () => {
    let sawCancel = false;
    pausedSession((req) => {
      if (req.op !== "trace") return { ok: false, kind: "bad-request", error: req.op };
      return { ok: false, kind: "cancelled", error: "cancelled", traceback: null, _cancel: req.cancelFile };
    });
    const c = commands();
    // Press Cancel while the evaluate runs: the file must exist before the reply.
    const { session } = { session: fakeDebug.activeDebugSession as { customRequest: (c: string, a: Record<string, unknown>) => Promise<unknown> } };
    const orig = session.customRequest;
    session.customRequest = async (cmd, args) => {
      const req = requestOf(args.expression as string) as Extract<DebugRequest, { op: "trace" }>;
      cancelNow.press!();
      const end = Date.now() + 2000;
      while (!existsSync(req.cancelFile!) && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
      sawCancel = existsSync(req.cancelFile!);
      return orig(cmd, args);
    };
    await c.visualizeVariable({ sessionId: "s1", variable: { name: "model", evaluateName: "self.model" } });
    assert.ok(sawCancel, "the cancel file was written while the evaluate ran");
    assert.equal(messages("showErrorMessage").length, 0);
    assert.equal(GraphPanel.find(DEBUG_URI, "self.model"), undefined);
  });

  it("needs-input → an input typed → traced with it", async () => {
    const { requests } = pausedSession((req) => {
      if (req.op !== "trace") return { ok: false, kind: "bad-request", error: req.op };
      if (!req.input) return { ok: false, kind: "needs-input", error: "no input for Block", traceback: null };
      writeFileSync(req.out, GRAPH);
      return { ok: true, path: req.out, size: 4, summary: { ...summary, input: req.input } };
    });
    vs.answers.push({ id: "type" }, "torch.randn(2, 8)");
    await commands().visualizeVariable({ sessionId: "s1", variable: { name: "net", evaluateName: "net" } });
    assert.deepEqual(
      requests.filter((r) => r.op === "trace").map((r) => (r as { input?: string }).input ?? null),
      [null, "torch.randn(2, 8)"],
    );
    assert.ok(GraphPanel.find(DEBUG_URI, "net"));
  });

  it("inputs unknown → trace the next call: armed, then the graph when the file appears", async () => {
    const { requests } = pausedSession((req) => {
      if (req.op === "candidates") return { ok: true, modules: [{ ...block, inputs: false, input: null }], more: 0 };
      if (req.op === "trace_next_call") {
        // The program runs the model a little later: the hook writes the file.
        setTimeout(() => writeFileSync(req.out, GRAPH), 300);
        return { ok: true, armed: true, path: req.out, model: "Block" };
      }
      return { ok: false, kind: "bad-request", error: req.op };
    });
    vs.answers.push(candidateItems([{ ...block, inputs: false }])[0], { id: "next" });
    await commands().visualizePausedFrame();
    assert.deepEqual(
      requests.map((r) => r.op),
      ["candidates", "warm", "trace_next_call"],
    );
    assert.deepEqual(requests[1], { op: "warm" }, "no read-ahead for a model whose input is unknown");
    assert.ok(messages("showInformationMessage").some((m) => /continue the program/.test(m)));
    const panel = GraphPanel.find(DEBUG_URI, "self")!;
    assert.equal(panel.title, "Forward pass: Block");
    assert.deepEqual([...panel.bytes!], [...GRAPH]);
  });

  it("remote attach, next call: at the next stop `poll` says done and the graph comes through read_chunk", async () => {
    const remote = "/remote/storage/graphs/g.msgpack";
    const { session, requests } = pausedSession((req) => {
      if (req.op === "trace_next_call") return { ok: true, armed: true, path: remote, model: "Block" };
      if (req.op === "poll") return { ok: true, done: true, path: remote, size: GRAPH.length, summary };
      if (req.op === "read_chunk") return { ok: true, data: GRAPH.toString("base64"), offset: 0, size: GRAPH.length, total: GRAPH.length, eof: true };
      if (req.op === "remove") return { ok: true, removed: true };
      return { ok: false, kind: "needs-input", error: "no input", traceback: null };
    });
    vs.answers.push({ id: "next" });
    const done = commands().visualizeVariable({ sessionId: "s1", variable: { name: "m", evaluateName: "m" } });
    await new Promise((r) => setTimeout(r, 100));
    // The program ran the model (on the other machine) and stopped again.
    stackItemChanged.fire({ session, threadId: 1, frameId: 5 });
    await done;
    assert.deepEqual(
      requests.map((r) => r.op),
      ["warm", "trace", "trace_next_call", "poll", "read_chunk", "remove"],
    );
    const panel = GraphPanel.find(DEBUG_URI, "m")!;
    assert.deepEqual([...panel.bytes!], [...GRAPH]);
  });

  it("a next-call trace that fails: its error file is the message", async () => {
    pausedSession((req) => {
      if (req.op === "trace_next_call") {
        setTimeout(
          () =>
            writeFileSync(`${req.out}.error.json`, JSON.stringify({ ok: false, kind: "timeout", error: "the trace took over 5 s", traceback: null })),
          200,
        );
        return { ok: true, armed: true, path: req.out, model: "Block" };
      }
      return { ok: false, kind: "needs-input", error: "no input", traceback: null };
    });
    vs.answers.push({ id: "next" });
    await commands().visualizeVariable({ sessionId: "s1", variable: { name: "m", evaluateName: "m" } });
    assert.ok(messages("showErrorMessage").some((m) => /took over 5 s/.test(m)));
    assert.equal(GraphPanel.find(DEBUG_URI, "m"), undefined);
  });

  it("the session ends before the next call: a message, no graph", async () => {
    const { session } = pausedSession((req) =>
      req.op === "trace_next_call" ? { ok: true, armed: true, path: req.out, model: "Block" } : { ok: false, kind: "needs-input", error: "x" },
    );
    vs.answers.push({ id: "next" });
    const done = commands().visualizeVariable({ sessionId: "s1", variable: { name: "m", evaluateName: "m" } });
    await new Promise((r) => setTimeout(r, 100));
    sessionEnded.fire(session);
    await done;
    assert.ok(messages("showInformationMessage").some((m) => /session ended before Block ran again/.test(m)));
  });

  it("a model that raises: the partial graph and a message naming the error", async () => {
    pausedSession((req) => {
      if (req.op !== "trace") return { ok: false };
      writeFileSync(req.out, GRAPH);
      return {
        ok: true,
        path: req.out,
        size: 4,
        summary: { ...summary, error: { type: "RuntimeError", message: "shapes differ", file: null, line: null } },
      };
    });
    await commands().visualizeVariable({ sessionId: "s1", variable: { name: "m", evaluateName: "m" } });
    assert.ok(GraphPanel.find(DEBUG_URI, "m")?.bytes);
    assert.ok(messages("showWarningMessage").some((m) => /Block raised RuntimeError: shapes differ/.test(m)));
  });

  it("the entry's errors are messages with a way forward", async () => {
    const cases: [ErrorReply, RegExp, string?][] = [
      [{ ok: false, kind: "no-torch", error: "torch is not importable" }, /debugged program has no torch/],
      [{ ok: false, kind: "timeout", error: "took over 60 s" }, /took over 60 s/, "Change Time Limit"],
      [{ ok: false, kind: "target-error", error: "'foo' is not an nn.Module" }, /not an nn.Module/],
      [{ ok: false, kind: "internal", error: "boom", traceback: "Traceback..." }, /boom/, "Show Details"],
    ];
    for (const [reply, re, button] of cases) {
      vs.calls.length = 0;
      pausedSession(() => reply);
      await commands().visualizeVariable({ sessionId: "s1", variable: { name: "m", evaluateName: "m" } });
      const err = vs.calls.find((c) => c.api === "showErrorMessage")!;
      assert.match(String(err.args[0]), re);
      if (button) assert.ok(err.args.includes(button), `${reply.kind} offers ${button}`);
    }
  });
});
