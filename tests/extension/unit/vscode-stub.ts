// A small stand-in for the `vscode` module: just what the extension's logic touches,
// with every call recorded so tests can look at what the extension asked VS Code to do.
import * as fs from "node:fs";
import * as path from "node:path";

export const calls: { api: string; args: unknown[] }[] = [];
function record(api: string, args: unknown[]): void {
  calls.push({ api, args });
}

/** Settings the stub's getConfiguration returns, keyed "section.name". */
export const settings = new Map<string, unknown>();
/** Answers to showInputBox / showQuickPick / message buttons, taken in order. */
export const answers: unknown[] = [];

export class Disposable {
  constructor(private readonly fn: () => void = () => undefined) {}
  dispose(): void {
    this.fn();
  }
  static from(...ds: { dispose(): unknown }[]): Disposable {
    return new Disposable(() => {
      for (const d of ds) d.dispose();
    });
  }
}

export class EventEmitter<T> {
  private listeners: ((e: T) => void)[] = [];
  event = (l: (e: T) => void): Disposable => {
    this.listeners.push(l);
    return new Disposable(() => (this.listeners = this.listeners.filter((x) => x !== l)));
  };
  fire(e: T): void {
    for (const l of this.listeners) l(e);
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly fsPath: string,
    readonly raw?: string,
  ) {}
  static file(p: string): Uri {
    return new Uri("file", path.normalize(p));
  }
  static parse(s: string): Uri {
    if (s.startsWith("file://")) return new Uri("file", decodeURIComponent(s.slice(7)));
    const i = s.indexOf(":");
    return new Uri(s.slice(0, i), s.slice(i + 1), s);
  }
  static joinPath(u: Uri, ...parts: string[]): Uri {
    return new Uri(u.scheme, path.join(u.fsPath, ...parts));
  }
  /** Another scheme (a virtual document of the same file); the query is kept in the string. */
  with(change: { scheme?: string; query?: string }): Uri {
    const scheme = change.scheme ?? this.scheme;
    return new Uri(scheme, this.fsPath, `${scheme}://${this.fsPath}${change.query ? `?${change.query}` : ""}`);
  }
  get path(): string {
    return this.fsPath;
  }
  toString(): string {
    return this.raw ?? `${this.scheme}://${this.fsPath}`;
  }
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}
export class Range {
  constructor(
    readonly start: Position,
    readonly end: Position,
  ) {}
}
export class CancellationError extends Error {}

export enum ViewColumn {
  Active = -1,
  Beside = -2,
  One = 1,
  Two = 2,
  Three = 3,
}
export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}
export enum TextEditorRevealType {
  Default = 0,
  InCenter = 1,
  InCenterIfOutsideViewport = 2,
  AtTop = 3,
}

export interface StubWebview {
  html: string;
  options: unknown;
  cspSource: string;
  posted: unknown[];
  postMessage(m: unknown): Promise<boolean>;
  asWebviewUri(u: Uri): Uri;
  onDidReceiveMessage(l: (m: unknown) => void, thisArg?: unknown, disposables?: Disposable[]): Disposable;
  receive(m: unknown): void;
}

export interface StubPanel {
  viewType: string;
  title: string;
  webview: StubWebview;
  viewColumn: ViewColumn;
  revealed: number;
  disposed: boolean;
  reveal(): void;
  dispose(): void;
  onDidDispose(l: () => void, thisArg?: unknown, disposables?: Disposable[]): Disposable;
  onDidChangeViewState(l: (e: unknown) => void, thisArg?: unknown, disposables?: Disposable[]): Disposable;
}

export const panels: StubPanel[] = [];

export interface CancellationToken {
  isCancellationRequested: boolean;
  onCancellationRequested: (l: () => void) => Disposable;
}
export class CancellationTokenSource {
  private readonly cancelled = new EventEmitter<void>();
  readonly token: CancellationToken = { isCancellationRequested: false, onCancellationRequested: this.cancelled.event };
  cancel(): void {
    if (this.token.isCancellationRequested) return;
    this.token.isCancellationRequested = true;
    this.cancelled.fire();
  }
  dispose(): void {}
}

/** Presses Cancel on the last progress notification. */
export const progressCancel: { press: () => void } = { press: () => undefined };

function makePanel(viewType: string, title: string, options: unknown): StubPanel {
  const messages = new EventEmitter<unknown>();
  const disposed = new EventEmitter<void>();
  const webview: StubWebview = {
    html: "",
    options,
    cspSource: "https://stub.vscode-cdn.net",
    posted: [],
    postMessage(m) {
      this.posted.push(m);
      return Promise.resolve(true);
    },
    asWebviewUri: (u) => Uri.parse(`https://stub.vscode-cdn.net${u.fsPath}`),
    onDidReceiveMessage: (l, _t, ds) => {
      const d = messages.event(l);
      ds?.push(d);
      return d;
    },
    receive: (m) => messages.fire(m),
  };
  const panel: StubPanel = {
    viewType,
    title,
    webview,
    viewColumn: ViewColumn.Two,
    revealed: 0,
    disposed: false,
    reveal() {
      this.revealed++;
    },
    dispose() {
      if (this.disposed) return;
      this.disposed = true;
      disposed.fire();
    },
    onDidDispose: (l, _t, ds) => {
      const d = disposed.event(l);
      ds?.push(d);
      return d;
    },
    onDidChangeViewState: () => new Disposable(),
  };
  panels.push(panel);
  return panel;
}

/** A question or message to the user: recorded, answered with the next of `answers`. */
function answer(api: string, args: unknown[]): Promise<unknown> {
  record(api, args);
  return Promise.resolve(answers.shift());
}

/** Fire to move an editor's cursor (`{ textEditor, selections }`) for whoever listens (followCursor). */
export const selectionChanged = new EventEmitter<unknown>();

export const window = {
  activeTextEditor: undefined as unknown,
  visibleTextEditors: [] as unknown[],
  createWebviewPanel: (viewType: string, title: string, column: unknown, options: unknown) => {
    record("createWebviewPanel", [viewType, title, column, options]);
    return makePanel(viewType, title, options);
  },
  showInformationMessage: (...args: unknown[]) => answer("showInformationMessage", args),
  showWarningMessage: (...args: unknown[]) => answer("showWarningMessage", args),
  showErrorMessage: (...args: unknown[]) => answer("showErrorMessage", args),
  showInputBox: (...args: unknown[]) => answer("showInputBox", args),
  showQuickPick: (...args: unknown[]) => answer("showQuickPick", args),
  showSaveDialog: (...args: unknown[]) => answer("showSaveDialog", args),
  setStatusBarMessage: (...args: unknown[]) => {
    record("setStatusBarMessage", args);
    return new Disposable();
  },
  withProgress: <R>(opts: unknown, task: (p: { report(v: unknown): void }, t: CancellationToken) => Promise<R>) => {
    record("withProgress", [opts]);
    const cancelled = new EventEmitter<void>();
    const token = { isCancellationRequested: false, onCancellationRequested: cancelled.event };
    // The notification's Cancel button, for the test to press while the task runs.
    progressCancel.press = () => {
      token.isCancellationRequested = true;
      cancelled.fire();
    };
    return task({ report: (v) => record("progress", [v]) }, token);
  },
  showTextDocument: (doc: unknown, options?: unknown) => {
    record("showTextDocument", [doc, options]);
    return Promise.resolve({ document: doc, revealRange: (...a: unknown[]) => record("revealRange", a) });
  },
  createOutputChannel: (name: string) => logChannel(name),
  onDidChangeTextEditorSelection: (l: (e: unknown) => void) => selectionChanged.event(l),
  registerWebviewPanelSerializer: () => new Disposable(),
};

export function logChannel(name = "torchscope"): Record<string, unknown> & { lines: string[] } {
  const lines: string[] = [];
  // as VS Code's: a line below the channel's own level (vscode.LogLevel, Info = 3) is dropped
  const channel = { logLevel: 2 };
  const at = { trace: 1, debug: 2, info: 3, warn: 4, error: 5 } as Record<string, number>;
  const put = (level: string) => (m: string) => {
    if (!(channel.logLevel > (at[level] ?? 5))) lines.push(`${level} ${m}`);
  };
  return {
    name,
    lines,
    get logLevel() {
      return channel.logLevel;
    },
    set logLevel(v: number) {
      channel.logLevel = v;
    },
    info: put("info"),
    warn: put("warn"),
    error: put("error"),
    debug: put("debug"),
    trace: put("trace"),
    appendLine: put(""),
    show: () => undefined,
    dispose: () => undefined,
  };
}

export const workspace = {
  workspaceFolders: undefined as { uri: Uri }[] | undefined,
  getConfiguration: (section?: string) => ({
    get: <T>(name: string, dflt?: T): T => {
      const key = section ? `${section}.${name}` : name;
      return (settings.has(key) ? settings.get(key) : dflt) as T;
    },
  }),
  getWorkspaceFolder: () => workspace.workspaceFolders?.[0],
  /** Documents openTextDocument returns, by uri string. */
  documents: new Map<string, unknown>(),
  /** The documents VS Code has open: those above. */
  get textDocuments(): unknown[] {
    return [...workspace.documents.values()];
  },
  openTextDocument: (uri: Uri) => {
    record("openTextDocument", [uri]);
    const d = workspace.documents.get(uri.toString()) ?? diskDocument(uri);
    return d ? Promise.resolve(d) : Promise.reject(new Error(`no document ${uri.toString()}`));
  },
  asRelativePath: (u: Uri) => path.basename(u.fsPath),
  /** Files the extension wrote through workspace.fs. */
  written: new Map<string, Uint8Array>(),
  fs: {
    writeFile: async (u: Uri, data: Uint8Array) => {
      record("writeFile", [u, data]);
      workspace.written.set(u.fsPath, data);
    },
  },
  saved: new EventEmitter<unknown>(),
  onDidSaveTextDocument: (l: (d: unknown) => void) => workspace.saved.event(l),
  onDidChangeConfiguration: () => new Disposable(),
  contentProviders: new Map<string, unknown>(),
  registerTextDocumentContentProvider: (scheme: string, provider: unknown): Disposable => {
    workspace.contentProviders.set(scheme, provider);
    return new Disposable(() => workspace.contentProviders.delete(scheme));
  },
};

/** A file on disk that is not open in the editor: opened as VS Code would (not in textDocuments). */
function diskDocument(uri: Uri): unknown {
  if (uri.scheme !== "file" || !fs.existsSync(uri.fsPath) || !fs.statSync(uri.fsPath).isFile()) return undefined;
  const lines = fs.readFileSync(uri.fsPath, "utf8").split("\n");
  return {
    uri,
    languageId: uri.fsPath.endsWith(".py") ? "python" : "plaintext",
    lineCount: lines.length,
    getText: () => lines.join("\n"),
    lineAt: (i: number) => ({ text: lines[i] ?? "", firstNonWhitespaceCharacterIndex: (lines[i] ?? "").search(/\S|$/) }),
  };
}

export const env = {
  openExternal: (u: Uri) => {
    record("openExternal", [u]);
    return Promise.resolve(true);
  },
};

export const installedExtensions = new Map<string, unknown>();
export const extensions = {
  getExtension: (id: string) => installedExtensions.get(id),
};

export const commands = {
  registered: new Map<string, (...a: unknown[]) => unknown>(),
  registerCommand: (id: string, fn: (...a: unknown[]) => unknown): Disposable => {
    commands.registered.set(id, fn);
    return new Disposable(() => commands.registered.delete(id));
  },
  executeCommand: (...args: unknown[]) => {
    record("executeCommand", args);
    return Promise.resolve(undefined);
  },
};

/** Forget everything recorded and configured between tests. */
export function reset(): void {
  calls.length = 0;
  settings.clear();
  answers.length = 0;
  panels.length = 0;
  installedExtensions.clear();
  workspace.workspaceFolders = undefined;
  workspace.documents.clear();
  workspace.written.clear();
  workspace.saved.dispose();
  window.activeTextEditor = undefined;
  window.visibleTextEditors = [];
}
