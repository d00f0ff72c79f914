// A stand-in for `vscode.debug` (the shared stub has none), installed on the stub before the
// extension's modules are imported: they copy the stub's names when they load.
import * as vs from "./vscode-stub";

export const stackItemChanged = new vs.EventEmitter<unknown>();
export const sessionEnded = new vs.EventEmitter<unknown>();

export const fakeDebug = {
  activeStackItem: undefined as unknown,
  activeDebugSession: undefined as unknown,
  onDidChangeActiveStackItem: stackItemChanged.event,
  onDidTerminateDebugSession: sessionEnded.event,
};

(require("vscode") as Record<string, unknown>).debug = fakeDebug;
