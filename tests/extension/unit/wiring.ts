// The fake wiring the extension's tests share: a traced model's summary, the stub's call log,
// a python document, a fake language server, the extension as `wire` builds it and the reset between tests.
// First: vscode.debug on the stub before the extension's modules load (as every test file does).
import { fakeDebug } from "./debug-fake";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as vs from "./vscode-stub";
import type { Server } from "../../../extension/src/client";
import { wire } from "../../../extension/src/extension";
import { GraphPanel } from "../../../extension/src/graphPanel";
import { TORCHSCOPE_ERROR, type TraceSummary } from "../../../extension/src/protocol";

/** A small model's trace that did not raise: the summary each test spreads its differences over. */
export const SUMMARY: TraceSummary = {
  model: "Net",
  qualname: "net.Net",
  nodes: 3,
  edges: 2,
  ops: 1,
  modules: 1,
  params: 10,
  trace_ms: 5,
  input: "inferred",
  error: null,
};

/** Close every panel, clear the stub and the paused session: each test starts from none of the last one's state. */
export function resetWiring(): void {
  for (const p of GraphPanel.all()) p.dispose();
  vs.reset();
  fakeDebug.activeStackItem = undefined;
  fakeDebug.activeDebugSession = undefined;
}

/** The stub's recorded calls of one API (showErrorMessage, executeCommand, …). */
export const calls = (api: string) => vs.calls.filter((c) => c.api === api);
/** The first argument of each call of `api`: the messages shown. */
export const messages = (api: string) => calls(api).map((c) => String(c.args[0]));
/** Let what a command left running (a message's `.then`, a panel's load) finish. */
export const settle = () => new Promise((r) => setTimeout(r, 20));
/** Run a registered command as the palette would. */
export const run = (id: string, ...args: unknown[]) => vs.commands.registered.get(id)!(...args) as Promise<unknown>;

/** A reply that rejects as the server does with a torchscope error of `kind` (needs-input, no-torch, …). */
export const fail =
  (kind: string, extra: object = {}) =>
  () => {
    throw Object.assign(new Error(`${kind} happened`), { code: TORCHSCOPE_ERROR, data: { kind, ...extra } });
  };

/** A python document open in the stub's workspace, as revealLine and the editor source read it (each line indented `indent`). */
export function pyDoc(file: string, text = "class Net(nn.Module): ...\n", indent = 4) {
  const doc = {
    uri: vs.Uri.file(file),
    languageId: "python",
    lineCount: 40,
    getText: () => text,
    lineAt: () => ({ text: `${" ".repeat(indent)}x = f(x)`, firstNonWhitespaceCharacterIndex: indent }),
  };
  vs.workspace.documents.set(doc.uri.toString(), doc);
  return doc;
}

/** A running language server that finds `Net` and traces nothing: each test overrides what it asks of it. */
export function fakeServer(overrides: Partial<Server> = {}): Server {
  return {
    python: { path: "/venv/bin/python", source: "setting" },
    running: true,
    targetAt: async () => ({ target: "Net", kind: "class", line: 0 }),
    targets: async () => [],
    trace: async () => Promise.reject(new Error("not in these tests")),
    compare: async () => Promise.reject(new Error("not in these tests")),
    restart: async () => undefined,
    ...overrides,
  };
}

/** The extension as `wire` builds it for `server`: workspaceState over a Map, storage in a folder (a new temp one unless given). */
export function wiredExtension(server: Server, opts: { storage?: string; toolDir?: string; viewerDir?: string } = {}) {
  const memento = new Map<string, unknown>();
  const storage = opts.storage ?? mkdtempSync(join(tmpdir(), "torchscope-unit-storage-"));
  const context = {
    workspaceState: {
      get: (k: string, d: unknown) => (memento.has(k) ? memento.get(k) : d),
      update: async (k: string, v: unknown) => void memento.set(k, v),
    },
    globalStorageUri: vs.Uri.file(storage),
  };
  const log = vs.logChannel();
  const bundle = { toolDir: opts.toolDir ?? "/ext/tool", libsDir: undefined, viewerDir: opts.viewerDir ?? "/ext/viewer" };
  return { ...wire(context as never, server, bundle, log as never), log, memento, storage };
}
