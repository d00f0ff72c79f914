// Entry point: wires the output channel, the language client, the one trace flow with its two
// sources (the language server, a paused debug session), the commands and the cursor link
// together. Logic lives in the other files.
import * as path from "node:path";
import * as vscode from "vscode";
import { ServerClient, findBundle, watchEnvFile, type Bundle, type Server } from "./client";
import { Commands } from "./commands";
import { CompareCommands } from "./compareCommands";
import { CompareSources, PausedHistory } from "./compareSource";
import { DebugCommands } from "./debugCommands";
import { AnswerStore, EditorSources } from "./editorSource";
import { HeadDocuments } from "./gitHead";
import { interpreterSettings, onInterpreterChange } from "./interpreter";
import { levelled, settingLevel } from "./logChannel";
import { PausedSources } from "./pausedSource";
import { PausedHere } from "./pausedHere";
import { GraphPanel } from "./graphPanel";
import { PanelGraphs } from "./panelGraphs";
import { registerRevealNode, reindexPanels } from "./revealNode";
import { followCursor, type LinesNow } from "./reveal";
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
): {
  flow: TraceFlow;
  editor: EditorSources;
  paused: PausedSources;
  compare: CompareSources;
  commands: Commands;
  debug: DebugCommands;
  compareCommands: CompareCommands;
  head: HeadDocuments;
} {
  const answers = new AnswerStore(context.workspaceState);
  const editor = new EditorSources({ server, answers, log });
  const debugPy = path.join(bundle.toolDir, "torchscope", "debug.py");
  const history = new PausedHistory();
  const onTraced = (target: string, model: string, file: string, identity?: string): void => history.record(target, model, file, identity);
  const paused = new PausedSources({ debugPy, graphsDir: graphFolders(context.globalStorageUri.fsPath).paused, log, onTraced });
  const head = new HeadDocuments();
  const compare = new CompareSources({ server, editor, answers, head, history, log });
  // Comparisons first, then the paused kind: the editor's owns every other panel (a document's, a graph file's).
  const flow = new TraceFlow(vscode.Uri.file(bundle.viewerDir), log, [compare, paused, editor], linesNow(server));
  const commands = new Commands({ flow, editor, client: server, bundle, log });
  const compareCommands = new CompareCommands({ flow, compare, server, log });
  return { flow, editor, paused, compare, commands, debug: new DebugCommands({ flow, paused, log }), compareCommands, head };
}

/** torchscope/lines, when the server has it (a test's fake may not). */
function linesNow(server: Server): LinesNow | undefined {
  return server.lines ? (graph, file) => server.lines!(graph, file) : undefined;
}

/** Settings the server reads when it starts (torchscope.inlayHints, told to the running server, is not one). */
const SERVER_SETTINGS = ["torchscope.traceTimeoutSeconds", "torchscope.logLevel"];

/** A settings change: a restart (once, however many changed) when the server started with one of
 * them, the interpreter's among them: python.defaultInterpreterPath too when it chose the
 * interpreter (no torchscope.pythonPath, no Python extension). The reason goes to the log. */
export function settingsChanged(
  e: vscode.ConfigurationChangeEvent,
  server: Pick<ServerClient, "python" | "restartSoon" | "inlayHintsChanged">,
): void {
  const changed = [...interpreterSettings(server.python), ...SERVER_SETTINGS].filter((key) => e.affectsConfiguration(key));
  if (changed.length) server.restartSoon(`${changed.join(", ")} changed`);
  else if (e.affectsConfiguration("torchscope.inlayHints")) server.inlayHintsChanged();
}

/** The Python extension picked another interpreter: a restart, unless torchscope.pythonPath chose
 * the server's (then it is not the server's, and the warm runner stays). */
export function pythonInterpreterChanged(server: Pick<ServerClient, "python" | "restartSoon" | "shutdownRunner">): void {
  if (server.python?.source === "setting") return;
  void server.shutdownRunner();
  server.restartSoon("the Python extension's interpreter changed");
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  // torchscope.logLevel holds for the extension's own lines as for the server's
  const level = () => settingLevel(vscode.workspace.getConfiguration("torchscope").get("logLevel"));
  const log = levelled(vscode.window.createOutputChannel("torchscope", { log: true }), level);
  const bundle = findBundle(context.extensionPath);
  client = new ServerClient(bundle, graphFolders(context.globalStorageUri.fsPath).editor, log);
  const server = client;
  // Start the server (and with it the runner, which imports torch) first: a Python file is
  // open, and a click in a window just opened waits for both. A failure is reported on first use.
  void server.ready().catch((e: unknown) => log.error(`starting the language server: ${String(e)}`));
  const { flow, commands, debug, compareCommands, head } = wire(context, server, bundle, log);
  const here = new PausedHere(server, log);
  // A (re)started server knows no graph: the panels' graphs give their files hints again.
  GraphPanel.remembered = new PanelGraphs(context.workspaceState);
  server.onStarted(() => reindexPanels(server, log, GraphPanel.remembered));

  context.subscriptions.push(
    log,
    { dispose: () => void server.dispose() },
    ...flow.register(),
    ...commands.register(),
    ...debug.register(),
    ...compareCommands.register(),
    head.register(),
    followCursor(linesNow(server)),
    here,
    flow.onShown((source, traced, panel) => void here.shown(source, traced, panel)),
    registerRevealNode(flow, log),
    vscode.workspace.onDidChangeConfiguration((e) => settingsChanged(e, server)),
    // the runner imports the user's files in the environment the file gives: a new one
    watchEnvFile(() => server.restartSoon("the environment file changed")),
    await onInterpreterChange(() => pythonInterpreterChanged(server)),
  );
}

export async function deactivate(): Promise<void> {
  await client?.dispose();
  client = undefined;
}
