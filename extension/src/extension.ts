// Entry point: wires the output channel, the language client, the one trace flow with its two
// sources (the language server, a paused debug session), the commands and the cursor link
// together. Logic lives in the other files.
import * as path from "node:path";
import * as vscode from "vscode";
import { ServerClient, findBundle, type Bundle, type Server } from "./client";
import { Commands } from "./commands";
import { DebugCommands } from "./debugCommands";
import { AnswerStore, EditorSources } from "./editorSource";
import { onInterpreterChange } from "./interpreter";
import { PausedSources } from "./pausedSource";
import { followCursor } from "./reveal";
import { TraceFlow } from "./traceFlow";

let client: ServerClient | undefined;

/** The graph files' folders: each writer its own, as each removes its old files. */
export function graphFolders(globalStorage: string): { editor: string; paused: string } {
  const graphs = path.join(globalStorage, "graphs");
  return { editor: path.join(graphs, "editor"), paused: path.join(graphs, "paused") };
}

/** The trace flow over its two sources, and the commands that start it. */
export function wire(
  context: Pick<vscode.ExtensionContext, "workspaceState" | "globalStorageUri">,
  server: Server,
  bundle: Bundle,
  log: vscode.LogOutputChannel,
): { flow: TraceFlow; editor: EditorSources; paused: PausedSources; commands: Commands; debug: DebugCommands } {
  const editor = new EditorSources({ server, answers: new AnswerStore(context.workspaceState), log });
  const debugPy = path.join(bundle.toolDir, "torchscope", "debug.py");
  const paused = new PausedSources({ debugPy, graphsDir: graphFolders(context.globalStorageUri.fsPath).paused, log });
  // The paused kind first: the editor's owns every other panel (a document's, a graph file's).
  const flow = new TraceFlow(vscode.Uri.file(bundle.viewerDir), log, [paused, editor]);
  const commands = new Commands({ flow, editor, client: server, bundle, log });
  return { flow, editor, paused, commands, debug: new DebugCommands({ flow, paused, log }) };
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel("torchscope", { log: true });
  const bundle = findBundle(context.extensionPath);
  client = new ServerClient(bundle, graphFolders(context.globalStorageUri.fsPath).editor, log);
  const server = client;
  const { flow, commands, debug } = wire(context, server, bundle, log);

  context.subscriptions.push(
    log,
    { dispose: () => void server.dispose() },
    ...flow.register(),
    ...commands.register(),
    ...debug.register(),
    followCursor(),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (
        e.affectsConfiguration("torchscope.pythonPath") ||
        e.affectsConfiguration("torchscope.traceTimeoutSeconds") ||
        e.affectsConfiguration("torchscope.logLevel")
      )
        server.restartSoon();
    }),
    await onInterpreterChange(() => {
      void server.shutdownRunner();
      server.restartSoon();
    }),
  );
  // Start the server now for the code lenses; a failure is reported on first use.
  void server.ready().catch((e: unknown) => log.error(`starting the language server: ${String(e)}`));
}

export async function deactivate(): Promise<void> {
  await client?.dispose();
  client = undefined;
}
