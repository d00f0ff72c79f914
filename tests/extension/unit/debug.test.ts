// Tracing at a breakpoint, the extension's side without VS Code: the evaluate expression
// (checked against the Python entry's own `loader_expression` and run by Python on paths
// with quotes and backslashes), reply parsing, candidate rows, chunk reassembly and the
// remote-attach fallback against a fake debug session.
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, it } from "node:test";
import {
  DebugBridge, DebugError, MAX_CHUNK, candidateItems, evaluateArgs, formatParams, loaderExpression, modelName, parseReply, pyString,
  readChunked, requestExpression, type Candidate, type ChunkReply, type DebugRequest, type ErrorReply,
} from "../../../extension/src/debugBridge";
import { variableExpression } from "../../../extension/src/debugCommands";

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
        DEBUG_PY, p,
      );
      assert.equal(loaderExpression(p), expected);
    }
  });

  it("round-trips a request with quotes, backslashes and non-ASCII", () => {
    const req: DebugRequest = { op: "trace", expr: `nets["g"]`, out: NASTY, input: `torch.randn(2, 3) # "é" \\ '`, timeBudget: 5, cancelFile: `${NASTY}.cancel` };
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
    const [r1, r2, r3] = out.trim().split("\n").map((l) => parseReply(l));
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
    for (const x of [undefined, 42, "", "Traceback (most recent call last):\n  File ...\nNameError: name 'x' is not defined", '{"ok": true, "path": "/tm', "[1, 2]"]) {
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
  const c = (o: Partial<Candidate>): Candidate => ({ expr: "m", name: "m", cls: "MLP", qualname: "x.MLP", params: 0, reason: "", inputs: false, input: null, ...o });
  const modules = [
    c({ expr: "self", name: "self", cls: "Block", params: 7_087_872, reason: "paused in its forward", inputs: true, input: "paused call (tensor [1, 64, 768] float32)" }),
    c({ expr: "model", name: "model", cls: "GPT2Model", params: 124_439_808, reason: "local", inputs: false }),
    c({ expr: "@stack:2", name: "Encoder", cls: "Encoder", params: 999, reason: "its forward is on the stack", inputs: true, input: "paused call (tensor [2, 8] float32)" }),
  ];

  it("keeps the entry's order (likeliest first) and says where the input comes from", () => {
    const items = candidateItems(modules);
    assert.deepEqual(items.map((i) => i.label), ["self", "model", "Encoder"]);
    assert.equal(items[0]!.description, "Block · 7.1M params");
    assert.equal(items[0]!.detail, "paused in its forward — input: paused call (tensor [1, 64, 768] float32)");
    assert.equal(items[1]!.description, "GPT2Model · 124M params");
    assert.match(items[1]!.detail, /^local — input unknown/);
    assert.equal(items[2]!.candidate.expr, "@stack:2");
  });

  it("formats parameter counts", () => {
    assert.deepEqual([0, 999, 1000, 1234, 65_000, 7_087_872, 124_439_808, 70_553_706_496].map(formatParams),
      ["0", "999", "1K", "1.2K", "65K", "7.1M", "124M", "70.6B"]);
  });

  it("names the panel after the class", () => {
    assert.equal(modelName({ model: "GPT2Model" }, "self"), "GPT2Model");
    assert.equal(modelName({ model: "transformers.GPT2Model" }, "self"), "GPT2Model");
    assert.equal(modelName(undefined, "self.model"), "model");
    assert.equal(modelName({ model: "" }, 'nets["g.x"]'), 'nets["g.x"]');
  });

  it("takes a Variables-view variable's evaluateName", () => {
    assert.deepEqual(variableExpression({ sessionId: "s", container: {}, variable: { name: "model", evaluateName: "self.model", value: "GPT2Model(...)" } }), { expr: "self.model", name: "model" });
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
    const r: ChunkReply = { ok: true, data: data.toString("base64"), offset, size: data.length, total: bytes.length, eof: offset + data.length >= bytes.length };
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
    assert.deepEqual(s.asked.map((a) => a.offset), [0, MAX_CHUNK, 2 * MAX_CHUNK]);
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
    assert.deepEqual(s.asked.map((a) => a.offset), [0, 300, 600, 900]);
    assert.equal((await readChunked(server(Buffer.alloc(0)).read)).byteLength, 0);
  });

  it("fails on a gap, a wrong size or an error reply", async () => {
    await assert.rejects(readChunked(server(big, (r, n) => (n === 2 ? { ...r, offset: r.offset + 1 } : r)).read), /expected/);
    await assert.rejects(readChunked(server(big, (r) => ({ ...r, size: r.size + 1 })).read), /said/);
    await assert.rejects(readChunked(server(big, (r, n) => (n === 2 ? { ok: false, kind: "internal", error: "gone" } : r)).read), (e: unknown) => e instanceof DebugError && e.kind === "internal");
    await assert.rejects(readChunked(server(big, (r, n) => (n === 2 ? { ...r, data: "", size: 0, eof: false } : r)).read), /empty chunk/);
  });
});

describe("the bridge against a fake session", () => {
  function fakeSession(files: Map<string, Buffer>, replies: Partial<Record<DebugRequest["op"], unknown>> = {}) {
    const seen: { command: string; args: Record<string, unknown>; request: DebugRequest }[] = [];
    const session = {
      id: "s1", type: "debugpy", name: "Python: nested.py",
      customRequest: async (command: string, args: Record<string, unknown>) => {
        const request = requestOf(args.expression as string);
        seen.push({ command, args, request });
        if (request.op === "read_chunk") {
          const b = files.get(request.path)!;
          const d = b.subarray(request.offset, request.offset + request.size);
          return { result: JSON.stringify({ ok: true, data: d.toString("base64"), offset: request.offset, size: d.length, total: b.length, eof: request.offset + d.length >= b.length }) };
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
    assert.deepEqual(await b.call({ op: "candidates" }), { ok: true, modules: [], more: 0 });
    assert.equal(seen[0]!.command, "evaluate");
    assert.equal(seen[0]!.args.frameId, 3);
  });

  it("an evaluate the debugger refuses is an evaluate-failed reply", async () => {
    const { session } = fakeSession(new Map());
    const r = await new DebugBridge({ session: session as never, frameId: 3 }, DEBUG_PY).request({ op: "poll", out: "/x" });
    assert.deepEqual(r, { ok: false, kind: "evaluate-failed", error: "not paused" });
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
    assert.deepEqual(seen.map((s) => s.request.op), ["read_chunk", "read_chunk", "read_chunk", "remove"]);
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
