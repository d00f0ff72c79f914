// The language client for `python -m torchscope.server`, run in the user's interpreter
// with the bundled pure-Python libraries on PYTHONPATH. Settings are resolved here and
// passed as initializationOptions; a settings or interpreter change restarts the server
// (debounced, so a burst of changes restarts it once), but for inlay hints, which the
// running server is told of (workspace/didChangeConfiguration).
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  ResponseError,
  RevealOutputChannelOn,
  State,
  WorkDoneProgress,
  type ErrorHandler,
  type LanguageClientOptions,
  type ServerOptions,
} from "vscode-languageclient/node";
import { RUNNER_ENV, envFilePath, readEnvFile, runnerEnv } from "./envFile";
import { resolveInterpreter, type Interpreter } from "./interpreter";
import { ClientLog } from "./logChannel";
import {
  COMPARE,
  GRAPH_SHOWN,
  LINES,
  LOG_LEVELS,
  REVEAL_NODE_COMMAND,
  SHUTDOWN_RUNNER,
  TARGETS,
  TARGET_AT,
  TORCHSCOPE_ERROR,
  TRACE,
  type CompareParams,
  type CompareResult,
  type GraphShownParams,
  type GraphShownResult,
  type LinesParams,
  type LinesResult,
  type InitOptions,
  type LogLevel,
  type TargetAtParams,
  type TargetAtResult,
  type TargetsParams,
  type TraceParams,
  type TraceResult,
} from "./protocol";

/** The JSON-RPC code of a cancelled request (LSP RequestCancelled). */
export const REQUEST_CANCELLED = -32800;

/** What the commands need from the server (a fake in the unit tests). */
export interface Server {
  readonly python: Interpreter | undefined;
  /** Whether the server is up (else a request waits for its start: about a second). */
  readonly running: boolean;
  targetAt(params: TargetAtParams): Promise<TargetAtResult | null>;
  /** Every model of a file (classes, instances, factories), in file order. */
  targets(params: TargetsParams): Promise<TargetAtResult[]>;
  /** Trace with LSP progress reported to `progress`; rejects with the server's error, or REQUEST_CANCELLED. */
  trace(params: Omit<TraceParams, "workDoneToken">, cancel: vscode.CancellationToken, progress: (message: string) => void): Promise<TraceResult>;
  /** Two graph files → the compare view's graph file (no torch needed). */
  compare(params: CompareParams): Promise<CompareResult>;
  /** Stop the server and start it again; rejects when it does not start. */
  restart(): Promise<void>;
  /** Where the lines a graph's file made are now (torchscope/lines); null when not known. */
  lines?(path: string, file: string): Promise<LinesResult["lines"]>;
}

/** Whether the interpreter's path names a file (relative to `cwd` when it has a folder
 * part, as the process starts there; on Windows perhaps without its `.exe`); a bare command
 * (`python3`) is looked up on PATH when it starts: true. */
export function interpreterExists(command: string, cwd: string | undefined, platform = process.platform): boolean {
  if (!command.includes("/") && !(platform === "win32" && command.includes("\\"))) return true;
  const file = path.resolve(cwd ?? process.cwd(), command);
  const names = platform === "win32" && !path.extname(file) ? [file, ...[".exe", ".com", ".bat", ".cmd"].map((e) => file + e)] : [file];
  return names.some((f) => fs.existsSync(f));
}

/** Why `python` can't run the language server (not a program, not Python, older than 3.10),
 * in one line; undefined when it can. Asked before the language client starts it: a process
 * that dies at once makes the client show messages of its own, restart it over and over and
 * leave errors in the extension host's log. */
export function pythonProblem(python: string, cwd: string | undefined, timeoutMs = 20_000): Promise<string | undefined> {
  const check = "import sys; v = sys.version_info; print('%d.%d.%d' % v[:3]); sys.exit(0 if v >= (3, 10) else 3)";
  return new Promise((resolve) => {
    execFile(python, ["-c", check], { cwd, timeout: timeoutMs, windowsHide: true }, (err, stdout, stderr) => {
      // (a program that ends well without saying a version, /bin/true, is no Python either)
      if (!err)
        return resolve(/^\d+\.\d+\.\d+$/.test(String(stdout).trim()) ? undefined : `${python} does not run as Python (it told no Python version)`);
      const code = (err as { code?: unknown }).code;
      // (the words the server itself would print: see torchscope/server/__main__.py)
      if (code === 3) return resolve(`torchscope needs Python 3.10 or newer: ${python} is Python ${String(stdout).trim()}`);
      const said = String(stderr).trim().split("\n").pop()?.trim();
      const why = typeof code === "string" ? code : err.killed ? "it did not answer" : said || err.message.split("\n")[0];
      resolve(`${python} does not run as Python (${why})`);
    });
  });
}

/** The client's error handling: while the server starts, a failure is torchscope's to report
 * (one message of its own: see the commands' serverFailed), so the client neither shows its
 * messages nor restarts the server; once it runs, the client's own (`running()`). */
function startingErrorHandler(running: () => ErrorHandler | undefined): ErrorHandler {
  return {
    error: (error, message, count) => running()?.error(error, message, count) ?? { action: ErrorAction.Shutdown, handled: true },
    closed: () => running()?.closed() ?? { action: CloseAction.DoNotRestart, handled: true },
  };
}

/** The interpreter as a message names it: its path and who chose it. */
export function describeInterpreter(i: Interpreter): string {
  const who = {
    setting: "torchscope.pythonPath",
    "python-extension": "the Python extension's interpreter",
    "python-setting": "python.defaultInterpreterPath",
    default: "the default",
  }[i.source];
  return `${i.path} (${who})`;
}

/** The line a progress notification shows for an LSP progress value: the server's stage
 * ("Starting Python", "Importing", "Building input", "Tracing"), never the begin's title,
 * which only repeats what the notification's own title says. */
export function progressText(v: { kind: string; message?: string | undefined }): string | undefined {
  return v.kind === "end" ? undefined : v.message || undefined;
}

/** Where the Python helper, its libraries and the viewer live: in the .vsix, or in the repository. */
export interface Bundle {
  toolDir: string;
  libsDir: string | undefined;
  viewerDir: string;
}

export function findBundle(extensionPath: string, exists: (p: string) => boolean = fs.existsSync): Bundle {
  const bundled = path.join(extensionPath, "bundled");
  if (exists(path.join(bundled, "tool", "torchscope"))) {
    const libs = path.join(bundled, "libs");
    return {
      toolDir: path.join(bundled, "tool"),
      libsDir: exists(libs) ? libs : undefined,
      viewerDir: path.join(bundled, "tool", "torchscope", "static"),
    };
  }
  const tool = path.join(extensionPath, "python_helper");
  return { toolDir: tool, libsDir: undefined, viewerDir: path.join(tool, "torchscope", "static") };
}

/** The workspace folder of `resource` (a file outside every folder: the first folder). */
export function folderOf(resource: vscode.Uri | undefined): vscode.WorkspaceFolder | undefined {
  return (resource && vscode.workspace.getWorkspaceFolder(resource)) || vscode.workspace.workspaceFolders?.[0];
}

/** The environment file (the Python extension's `python.envFile`) of `resource`'s workspace
 * folder: in a multi-root workspace each folder's own. */
export function workspaceEnvFile(resource?: vscode.Uri): string | undefined {
  const folder = folderOf(resource);
  const setting = vscode.workspace.getConfiguration("python", folder?.uri).get<string>("envFile");
  return envFilePath(setting, folder?.uri.fsPath);
}

/** What the language server (and its runner) is started with for a file: the interpreter
 * and environment file of its workspace folder, and that folder (where it starts). */
export interface RunSettings {
  interpreter: Interpreter;
  envFile: string | undefined;
  cwd: string | undefined;
  folder: string | undefined;
}

export async function runSettings(resource: vscode.Uri | undefined, warn?: (m: string) => void): Promise<RunSettings> {
  const folder = folderOf(resource);
  return {
    interpreter: await resolveInterpreter(resource ?? folder?.uri, warn),
    envFile: workspaceEnvFile(resource),
    cwd: folder?.uri.fsPath,
    folder: folder?.name,
  };
}

/** Whether a server started with `a` runs a file that wants `b` as that file's folder would. */
export function sameRunSettings(a: RunSettings, b: RunSettings): boolean {
  return a.interpreter.path === b.interpreter.path && a.envFile === b.envFile && a.cwd === b.cwd;
}

/** Calls `onChange` when the environment file is made, edited or removed, or the setting
 * points at another one. */
export function watchEnvFile(onChange: () => void): vscode.Disposable {
  let watchers: vscode.FileSystemWatcher[] = [];
  const watch = (): void => {
    for (const w of watchers) w.dispose();
    // (each folder's: a multi-root workspace's server runs with the folder of its last trace)
    const folders = vscode.workspace.workspaceFolders ?? [];
    const files = new Set((folders.length ? folders.map((f) => workspaceEnvFile(f.uri)) : [workspaceEnvFile()]).filter((f): f is string => !!f));
    watchers = [...files].map((file) =>
      vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(path.dirname(file), path.basename(file))),
    );
    for (const w of watchers) {
      w.onDidCreate(onChange);
      w.onDidChange(onChange);
      w.onDidDelete(onChange);
    }
  };
  watch();
  const setting = vscode.workspace.onDidChangeConfiguration((e) => {
    if (!e.affectsConfiguration("python.envFile")) return;
    watch();
    onChange();
  });
  return {
    dispose: () => {
      for (const w of watchers) w.dispose();
      setting.dispose();
    },
  };
}

/** PYTHONPATH for the server: bundled libraries first, then the helper, then the user's own. */
export function serverPythonPath(bundle: Bundle, existing: string | undefined): string {
  const parts = [bundle.libsDir, bundle.toolDir, ...(existing ? existing.split(path.delimiter) : [])];
  return parts.filter((p): p is string => !!p).join(path.delimiter);
}

function logLevel(setting: unknown): LogLevel {
  return LOG_LEVELS.find((l) => l === setting) ?? "info";
}

export function readInitOptions(storageDir: string): InitOptions {
  const cfg = vscode.workspace.getConfiguration("torchscope");
  const timeout = cfg.get<number>("traceTimeoutSeconds", 60);
  return {
    storageDir,
    traceTimeoutSeconds: typeof timeout === "number" && timeout > 0 ? timeout : 60,
    logLevel: logLevel(cfg.get<string>("logLevel", "info")),
    inlayHints: cfg.get<boolean>("inlayHints", true) !== false,
  };
}

/** Calls `fn` once, `ms` after the last of a burst of calls. */
export function debounce(fn: () => void, ms: number): { (): void; cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const run = (): void => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      fn();
    }, ms);
  };
  run.cancel = (): void => {
    if (timer) clearTimeout(timer);
    timer = undefined;
  };
  return run;
}

/** Restarts of a server that stopped while it ran, in 3 minutes, before the client gives up. */
const MAX_RESTARTS = 3;

export class ServerClient implements Server, vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<LanguageClient> | undefined;
  /** What the server runs with, and the file whose folder chose it (a restart keeps it). */
  private settings: RunSettings | undefined;
  private startedFor: vscode.Uri | undefined;
  /** Traces under way, and who waits for them to end (a switch to another folder's settings). */
  private traces = 0;
  private idleWaiters: (() => void)[] = [];
  private switching: Promise<void> = Promise.resolve();
  /** The last start failed (a bad interpreter): a settings change starts it again. */
  private startFailed = false;
  /** A client stopped on purpose, and why: what its unanswered traces say. */
  private readonly stoppedWhy = new WeakMap<LanguageClient, string>();
  private progressIds = 0;
  private readonly scheduleRestart = debounce(() => void this.restartIfRunning(), 500);
  /** Why the restart scheduled is (the settings that changed, …): one log line for a burst. */
  private readonly restartReasons = new Set<string>();
  private readonly startedListeners: (() => void)[] = [];

  constructor(
    private readonly bundle: Bundle,
    private readonly storageDir: string,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  get python(): Interpreter | undefined {
    return this.settings?.interpreter;
  }

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  /** The running client, started on first use. */
  ready(): Promise<LanguageClient> {
    if (this.client?.state === State.Running) return Promise.resolve(this.client);
    this.starting ??= this.start()
      .then(
        (client) => {
          this.startFailed = false;
          return client;
        },
        (e: unknown) => {
          this.startFailed = true;
          throw e;
        },
      )
      .finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async start(): Promise<LanguageClient> {
    // the folder of the file traced last (a restart keeps it), else of the file in the editor
    const settings = await runSettings(this.startedFor ?? vscode.window.activeTextEditor?.document.uri, (m) => this.log.warn(m));
    this.settings = settings;
    const { interpreter, cwd } = settings;
    // (the client would say "couldn't create connection to server" in a message of its own,
    // beside the one the commands show)
    if (!interpreterExists(interpreter.path, cwd)) throw new Error(`${interpreter.path} does not exist`);
    const problem = await pythonProblem(interpreter.path, cwd);
    if (problem) throw new Error(problem);
    fs.mkdirSync(this.storageDir, { recursive: true });
    const envFile = readEnvFile(settings.envFile, process.env);
    if (envFile.file) {
      const skipped = envFile.skipped.length ? `; lines not read: ${envFile.skipped.join(", ")}` : "";
      this.log.info(`environment file ${envFile.file}: ${Object.keys(envFile.vars).join(", ") || "no variables"}${skipped}`);
    }
    const forRunner = runnerEnv(envFile.vars, cwd);
    const env = {
      ...process.env,
      PYTHONPATH: serverPythonPath(this.bundle, process.env.PYTHONPATH),
      PYTHONUNBUFFERED: "1",
      ...(forRunner ? { [RUNNER_ENV]: forRunner } : {}),
    };
    const server: ServerOptions = {
      command: interpreter.path,
      args: ["-m", "torchscope.server"],
      options: { env, ...(cwd ? { cwd } : {}) },
    };
    const options: LanguageClientOptions = {
      documentSelector: [
        { scheme: "file", language: "python" },
        { scheme: "untitled", language: "python" },
      ],
      // The client's lines re-levelled, without its own time stamp (the log has one).
      outputChannel: new ClientLog(this.log),
      revealOutputChannelOn: RevealOutputChannelOn.Never, // errors are shown as messages instead
      initializationOptions: readInitOptions(this.storageDir),
      // A hover's "Show in graph" link runs this command, and only this one.
      markdown: { isTrusted: { enabledCommands: [REVEAL_NODE_COMMAND] } },
      connectionOptions: { maxRestartCount: MAX_RESTARTS },
      errorHandler: startingErrorHandler(() => running),
      // (a failed initialize: reported by serverFailed, not retried, not shown by the client)
      initializationFailedHandler: () => false,
    };
    this.log.info(`starting the language server: ${interpreter.path} -m torchscope.server (${interpreter.source})`);
    const client = new LanguageClient("torchscope", "torchscope", server, options);
    let running: ErrorHandler | undefined;
    this.client = client;
    try {
      await client.start();
    } catch (e) {
      if (this.client === client) this.client = undefined; // (the next command starts a new one)
      throw e;
    }
    running = client.createDefaultErrorHandler(MAX_RESTARTS);
    for (const l of this.startedListeners) l();
    return client;
  }

  /** Called after each start (a restart forgets the graphs the server had indexed). */
  onStarted(listener: () => void): void {
    this.startedListeners.push(listener);
  }

  async targetAt(params: TargetAtParams): Promise<TargetAtResult | null> {
    const client = await this.ready();
    return client.sendRequest<TargetAtResult | null>(TARGET_AT, params);
  }

  async targets(params: TargetsParams): Promise<TargetAtResult[]> {
    const client = await this.ready();
    return (await client.sendRequest<TargetAtResult[] | null>(TARGETS, params)) ?? [];
  }

  async trace(
    params: Omit<TraceParams, "workDoneToken">,
    cancel: vscode.CancellationToken,
    progress: (message: string) => void,
  ): Promise<TraceResult> {
    // One trace at a time past here until its server runs with its folder's settings and it
    // is counted: a second folder's trace then sees those settings, and waits for it to end.
    const before = this.switching;
    let release = (): void => undefined;
    this.switching = new Promise<void>((done) => (release = done));
    try {
      await before;
      await this.settingsFor(vscode.Uri.parse(params.uri));
      await this.ready();
      this.traces++;
    } finally {
      release();
    }
    try {
      return await this.traceNow(params, cancel, progress);
    } finally {
      if (--this.traces === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    }
  }

  /** In a multi-root workspace, a file of a folder whose interpreter or environment file is
   * not the server's: the server starts again with that folder's (once the traces under way
   * have ended), so each folder's code runs as its own settings say. */
  private async settingsFor(uri: vscode.Uri): Promise<void> {
    if ((vscode.workspace.workspaceFolders?.length ?? 0) < 2 || uri.scheme !== "file") return;
    if (this.starting) await this.starting.catch(() => undefined); // (then compared with its settings)
    if (!this.client) {
      this.startedFor = uri; // (a server not started, or whose start failed: it starts with these)
      return;
    }
    const wanted = await runSettings(uri, (m) => this.log.warn(m));
    if (this.settings && sameRunSettings(this.settings, wanted)) return;
    while (this.traces > 0) await new Promise<void>((wake) => this.idleWaiters.push(wake));
    if (this.settings && sameRunSettings(this.settings, wanted)) return; // (switched meanwhile)
    this.startedFor = uri;
    const env = wanted.envFile ? ` and ${wanted.envFile}` : "";
    await this.stop(`${path.basename(uri.fsPath)} is in the workspace folder ${wanted.folder ?? "?"}, which runs ${wanted.interpreter.path}${env}`);
  }

  private async traceNow(
    params: Omit<TraceParams, "workDoneToken">,
    cancel: vscode.CancellationToken,
    progress: (message: string) => void,
  ): Promise<TraceResult> {
    const client = await this.ready();
    const token = `torchscope-trace-${++this.progressIds}`;
    const sub = client.onProgress(WorkDoneProgress.type, token, (v) => {
      const m = progressText(v);
      if (m) progress(m);
    });
    try {
      return await client.sendRequest<TraceResult>(TRACE, { ...params, workDoneToken: token }, cancel);
    } catch (e) {
      if (cancel.isCancellationRequested) throw new ResponseError(REQUEST_CANCELLED, "Canceled");
      // the server was stopped meanwhile (a restart): its runner's kill, or the connection
      // closed before an answer, is that, not a crash or a lack of memory
      const why = this.stoppedWhy.get(client);
      if (why) throw new ResponseError(TORCHSCOPE_ERROR, why, { kind: "runner-stopped" });
      throw e;
    } finally {
      sub.dispose();
    }
  }

  async compare(params: CompareParams): Promise<CompareResult> {
    const client = await this.ready();
    return client.sendRequest<CompareResult>(COMPARE, params);
  }

  /** Where the lines of `file` that made something in graph `path` are now; null when the
   * server is not up (no reason to start it for this) or knows neither. */
  async lines(path: string, file: string): Promise<LinesResult["lines"]> {
    if (!this.running) return null;
    const client = await this.ready();
    const result = await client.sendRequest<LinesResult>(LINES, { path, file } satisfies LinesParams);
    return result?.lines ?? null;
  }

  /** Index a graph the server did not trace (a paused trace) for hints and hovers. */
  async graphShown(path: string, key: string): Promise<GraphShownResult> {
    const client = await this.ready();
    return client.sendRequest<GraphShownResult>(GRAPH_SHOWN, { path, key } satisfies GraphShownParams);
  }

  /** Stop the server (cleanly: shutdown, exit) and start it again. */
  async restart(): Promise<void> {
    this.scheduleRestart.cancel();
    this.restartReasons.clear();
    await this.stop();
    await this.ready();
  }

  private async stop(reason?: string): Promise<boolean> {
    // A start under way finishes first: a client that is still starting can't be stopped, and
    // the restart must not hand back that start (made with the settings before the change).
    if (this.starting) await this.starting.catch(() => undefined);
    const old = this.client;
    this.client = undefined;
    if (!old) return false;
    this.log.info(reason ? `${reason}: restarting the language server` : "restarting the language server");
    this.stoppedWhy.set(old, reason ? `the language server restarted (${reason})` : "the language server restarted");
    await old.stop().catch((e: unknown) => this.log.warn(`stopping the server: ${String(e)}`));
    return true;
  }

  /** torchscope.inlayHints changed: told to the running server, whose hints appear or go at
   * once (no restart: its runner stays warm); a server not started reads it when it starts. */
  inlayHintsChanged(): void {
    if (this.client?.state !== State.Running) return;
    const inlayHints = readInitOptions(this.storageDir).inlayHints;
    this.client
      .sendNotification("workspace/didChangeConfiguration", { settings: { torchscope: { inlayHints } } })
      .catch((e: unknown) => this.log.warn(`telling the server of the inlay hints setting: ${String(e)}`));
  }

  /** Restart soon: settings or the interpreter changed (`reason`, for the log: "torchscope.logLevel
   * changed"). Only a running server starts again right away (it keeps code lenses fresh); the
   * log and the status bar say when it is back, with which interpreter. */
  restartSoon(reason?: string): void {
    if (reason) this.restartReasons.add(reason);
    this.scheduleRestart();
  }

  private async restartIfRunning(): Promise<void> {
    const reason = [...this.restartReasons].join("; ");
    this.restartReasons.clear();
    const failed = this.startFailed; // (before stop: it waits for a start under way)
    const stopped = await this.stop(reason);
    if (!stopped && !failed && !this.startFailed) return;
    if (!stopped && reason) this.log.info(`${reason}: starting the language server again`);
    try {
      await this.ready();
      const interpreter = this.settings?.interpreter;
      if (!interpreter) return;
      this.log.info(`the language server is running again with ${describeInterpreter(interpreter)}`);
      vscode.window.setStatusBarMessage(`$(check) torchscope: language server restarted with ${interpreter.path}`, 5000);
    } catch (e) {
      this.log.error(`starting the server: ${String(e)}`);
    }
  }

  async shutdownRunner(): Promise<void> {
    if (this.client?.state !== State.Running) return;
    await this.client.sendRequest(SHUTDOWN_RUNNER).catch(() => undefined);
  }

  async dispose(): Promise<void> {
    this.scheduleRestart.cancel();
    const c = this.client;
    this.client = undefined;
    if (c) await c.stop().catch(() => undefined);
  }
}
