// The torchscope log, one line per event at its real level: the language client's stamped
// lines re-levelled without their second time stamp, the server's stderr cut into lines, a
// normal stop of the server as news, one line per trace (a warning when the forward raised),
// and the progress line showing the server's stage, never the begin's title.
import { strict as assert } from "node:assert";
import { describe, it } from "node:test";
import { describeInterpreter, progressText } from "../../../extension/src/client";
import { ClientLog, levelled, parseClientLine, settingLevel, stderrLevel, tracedLine, type Level } from "../../../extension/src/logChannel";
import type { TraceSummary } from "../../../extension/src/protocol";
import * as vs from "./vscode-stub";

const summary: TraceSummary = {
  model: "SmallCNN",
  qualname: "convnet.SmallCNN",
  nodes: 12,
  edges: 11,
  ops: 7,
  modules: 4,
  params: 1000,
  trace_ms: 35,
  input: "guessed from Conv2d(3, …): tensor [1, 3, 32, 32] float32",
  error: null,
};

describe("the language client's lines", () => {
  it("drop the client's stamp and keep its level", () => {
    assert.deepEqual(parseClientLine("[Info  - 10:12:13 AM] runner ready: torch 2.13.0 (pid 42)"), {
      level: "info",
      message: "runner ready: torch 2.13.0 (pid 42)",
      stamped: true,
    });
    assert.deepEqual(parseClientLine("[Error - 22:01:02] the trace failed\nTraceback …"), {
      level: "error",
      message: "the trace failed\nTraceback …",
      stamped: true,
    });
    assert.equal(parseClientLine("[Warn  - 1:02:03 PM] slow").level, "warn");
    assert.equal(parseClientLine("[Debug - 1:02:03] runner: x").level, "debug");
  });

  it("a clean exit of the server is news, a crash stays an error", () => {
    assert.equal(parseClientLine("[Error - 10:00:00] Server process exited with code 0.").level, "info");
    assert.equal(parseClientLine("[Error - 10:00:00] Server process exited with code 1.").level, "error");
    assert.equal(parseClientLine("[Error - 10:00:00] Server process exited with signal SIGKILL.").level, "error");
  });

  it("an unstamped line continues the previous message at its level", () => {
    assert.deepEqual(parseClientLine("    at Object.x (client.js:1)", "error"), {
      level: "error",
      message: "    at Object.x (client.js:1)",
      stamped: false,
    });
  });

  it("stderr: Python's logging levels, tracebacks as errors with their lines", () => {
    assert.equal(stderrLevel("WARNING pygls.protocol: slow handler", "info"), "warn");
    assert.equal(stderrLevel("ERROR pygls.server: boom", "info"), "error");
    assert.equal(stderrLevel("Traceback (most recent call last):", "info"), "error");
    assert.equal(stderrLevel('  File "x.py", line 3, in f', "error"), "error");
    assert.equal(stderrLevel("ValueError: bad", "error"), "error");
    assert.equal(stderrLevel("something the server printed", "info"), "info");
  });

  it("ClientLog writes each line once, at its level, without a second stamp", () => {
    const log = vs.logChannel();
    const ch = new ClientLog(log as never);
    ch.appendLine("[Info  - 10:12:13 AM] torchscope 0.1.0 server on /venv/bin/python");
    ch.appendLine("[Error - 10:12:14 AM] Request torchscope/trace failed.");
    ch.appendLine("  Message: boom"); // the client's data line under the message
    ch.append("WARNING pygls.protocol: one ");
    ch.append("line in two chunks\nINFO x: done\n");
    ch.appendLine("[Error - 10:12:15 AM] Server process exited with code 0.");
    assert.deepEqual(log.lines, [
      "info torchscope 0.1.0 server on /venv/bin/python",
      "error Request torchscope/trace failed.",
      "error   Message: boom",
      "warn server: WARNING pygls.protocol: one line in two chunks",
      "info server: INFO x: done",
      "info Server process exited with code 0.",
    ]);
    assert.ok(!log.lines.some((l) => /\[(Info|Error|Warn) +-/.test(l)), "no client stamp left");
  });
});

describe("one line per trace", () => {
  it("what was traced, how long, from which input", () => {
    assert.deepEqual(tracedLine("SmallCNN", summary, "request 120 ms"), {
      level: "info",
      text: "traced SmallCNN: 12 nodes, 7 ops in 35 ms (request 120 ms); input guessed from Conv2d(3, …): tensor [1, 3, 32, 32] float32",
    });
  });

  it("what loading the file left out is named", () => {
    const skipped = [
      { line: 18, text: "for step in range(3):" },
      { line: 22, text: "Path(...).write_text('trained')" },
      { line: 30, text: "print(model)" },
    ];
    assert.match(
      tracedLine("TinyNet", { ...summary, skipped }, "request 1 ms").text,
      /; not run at import: line 18: for step in range\(3\):, line 22: Path\(\.\.\.\)\.write_text\('trained'\) \(\+1 more\)$/,
    );
  });

  it("a forward that raised is a warning that says so first", () => {
    const raised = {
      ...summary,
      error: {
        type: "RuntimeError",
        message: "mat1 and mat2 shapes cannot be multiplied (1x4096 and 1024x10)\nmore",
        file: "/w/convnet.py",
        line: 30,
      },
    };
    const l = tracedLine("SmallCNN", raised, "request 90 ms");
    assert.equal(l.level, "warn");
    assert.equal(
      l.text,
      "traced SmallCNN: the forward raised RuntimeError: mat1 and mat2 shapes cannot be multiplied (1x4096 and 1024x10) at convnet.py:30; " +
        "12 nodes, 7 ops in 35 ms (request 90 ms); input guessed from Conv2d(3, …): tensor [1, 3, 32, 32] float32",
    );
    assert.doesNotMatch(l.text, /input inferred/);
  });
});

describe("progress and restarts", () => {
  it("the progress line is the server's stage, never the begin's title", () => {
    assert.equal(progressText({ kind: "begin", title: "Visualize SmallCNN" } as never), undefined);
    assert.equal(progressText({ kind: "begin", message: "Starting Python (importing torch)" }), "Starting Python (importing torch)");
    assert.equal(progressText({ kind: "report", message: "Importing train.py" }), "Importing train.py");
    assert.equal(progressText({ kind: "end", message: "done" }), undefined);
  });

  it("names the interpreter and who chose it", () => {
    assert.equal(describeInterpreter({ path: "/w/.venv/bin/python", source: "setting" }), "/w/.venv/bin/python (torchscope.pythonPath)");
    assert.equal(describeInterpreter({ path: "python3", source: "default" }), "python3 (the default)");
  });
});

describe("torchscope.logLevel holds for the extension's own lines", () => {
  it("'error' lets errors through only, 'warning' warnings too; read at each line", () => {
    // QA: with "error" set, every trace still wrote "[info] traced Net: …"
    const log = vs.logChannel();
    let level: Level = settingLevel("error");
    const out = levelled(log as never, () => level);
    out.info("traced Net");
    out.warn("a warning");
    out.error("an error");
    level = settingLevel("warning");
    out.warn("another warning");
    out.debug("details");
    level = settingLevel("debug");
    out.debug("more details");
    assert.deepEqual(log.lines, ["error an error", "warn another warning", "debug more details"]);
    assert.equal(out.name, log.name, "the rest of the channel as it is");
  });
  it("a debug line the setting asks for is written, marked, where the channel's own level would drop it", () => {
    const log = vs.logChannel();
    log.logLevel = 3; // VS Code's default: Info
    const out = levelled(log as never, () => settingLevel("debug"));
    out.debug("runner: details");
    out.info("traced Net");
    const quiet = levelled(log as never, () => settingLevel("info"));
    quiet.debug("not asked for");
    assert.deepEqual(log.lines, ["info debug: runner: details", "info traced Net"]);
  });
  it("the setting's names as the channel's", () => {
    assert.deepEqual(["error", "warning", "info", "debug", "bogus", undefined].map(settingLevel), ["error", "warn", "info", "debug", "info", "info"]);
  });
});
