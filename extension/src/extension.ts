// Entry point: wires the output channel, the language client, the commands, the graph
// panel and the cursor link together. Logic lives in the other files.
import * as path from "node:path";
import * as vscode from "vscode";
import { ServerClient, findBundle } from "./client";
import { Commands } from "./commands";
import { DebugCommands } from "./debugCommands";
import { onInterpreterChange } from "./interpreter";
import { followCursor } from "./reveal";

let client: ServerClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel("torchscope", { log: true });
  const bundle = findBundle(context.extensionPath);
  client = new ServerClient(bundle, path.join(context.globalStorageUri.fsPath, "graphs"), log);
  const commands = new Commands({ context, client, bundle, log });
  const server = client;

  context.subscriptions.push(
    log,
    { dispose: () => void server.dispose() },
    ...commands.register(),
    ...new DebugCommands({ context, bundle, log }).register(),
    followCursor(),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("torchscope.pythonPath") || e.affectsConfiguration("torchscope.traceTimeoutSeconds") ||
          e.affectsConfiguration("torchscope.logLevel")) server.restartSoon();
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
