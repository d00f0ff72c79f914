// Between the graph and the code: a click on a node opens its file at its line (a
// library file too: only a file that exists, and after a question when it is outside the
// workspace, see openGuard.ts), and the editor's cursor line is sent back to the panels so
// the viewer can mark the nodes made on that line. The graph names files by their real paths
// (symlinks resolved), the editor by the path the workspace was opened through: a click opens
// the document as the editor has it, and the cursor's file goes to the viewer as the graph has it.
import * as path from "node:path";
import * as vscode from "vscode";
import { debounce } from "./client";
import { parseCompareTarget } from "./compareTargets";
import { headUri, tracedFromHead } from "./gitHead";
import { GraphPanel } from "./graphPanel";
import { lineNow, lineTraced, type LinePairs } from "./lineMap";
import { fileKind, insideByPath, isKnown, openDecision, type OpenContext } from "./openGuard";
import type { PanelOrigin, Site } from "./protocol";
import { realPath } from "./realPath";
import { showWarning } from "./notify";

/** Files outside the workspace the user agreed to open in this window. */
const allowed = new Set<string>();

function openContext(panel: GraphPanel | undefined): OpenContext {
  const own = panel && vscode.Uri.parse(panel.origin.uri);
  return {
    folders: (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath),
    known: [
      ...(own?.scheme === "file" ? [own.fsPath] : []),
      ...vscode.workspace.textDocuments.filter((d) => d.uri.scheme === "file").map((d) => d.uri.fsPath),
      ...allowed,
    ],
  };
}

/**
 * May the panel open `file`? Missing files and non-files are refused with a message; a file
 * outside the workspace needs a yes (`automatic`: a reveal the user did not click for, which
 * never asks and says nothing).
 */
export async function mayOpen(file: string, panel: GraphPanel | undefined, automatic = false): Promise<boolean> {
  const ctx = openContext(panel);
  const decision = openDecision(file, isKnown(file, ctx) ? "file" : await fileKind(file), ctx);
  if (decision === "open") return true;
  if (automatic) return false;
  if (decision === "missing") {
    void showWarning(`torchscope: ${file} does not exist (the graph names a file that is not on this machine, or not any more).`);
    return false;
  }
  if (decision === "not-a-file") {
    void showWarning(`torchscope: ${file} is not a file; not opened.`);
    return false;
  }
  const choice = await showWarning(`Open ${file} (outside the workspace)?`, { modal: true }, "Open");
  if (choice !== "Open") return false;
  allowed.add(path.resolve(file));
  return true;
}

/** 1-based wire line → 0-based editor line, clamped into the document. */
export function editorLine(line: number, lineCount: number): number {
  const l = Math.floor(Number.isFinite(line) ? line : 1) - 1;
  return Math.max(0, Math.min(l, Math.max(0, lineCount - 1)));
}

/**
 * The cursor's UTF-16 column on `text`, a line of code: where a call starts, `col` being
 * Python's column of it (UTF-8 bytes, graph-format.md's `site.col`), when that is the start
 * of a character of code; else (no column, or one that can't be a call's: in the
 * indentation, on a space, past the end, inside a character — the line changed since) the
 * start of the line's code.
 */
export function cursorColumn(text: string, col: number | undefined): number {
  const code = text.length - text.trimStart().length;
  if (col === undefined || col <= 0) return code;
  let bytes = 0;
  for (let i = 0; i < text.length; ) {
    const cp = text.codePointAt(i)!;
    if (bytes === col) return i >= code && !/\s/.test(text[i]!) ? i : code;
    if (bytes > col) return code;
    bytes += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    i += cp > 0xffff ? 2 : 1;
  }
  return code;
}

/** Same file, whatever the spelling (`/a/./b.py` vs `/a/b.py`; case on Windows; through a
 * symlink: the graph's real path and the editor's path under a symlinked folder). */
export function sameFile(a: string, b: string, caseInsensitive = process.platform === "win32"): boolean {
  const same = (x: string, y: string): boolean => {
    const nx = path.normalize(x);
    const ny = path.normalize(y);
    return caseInsensitive ? nx.toLowerCase() === ny.toLowerCase() : nx === ny;
  };
  return same(a, b) || same(realPath(a), realPath(b));
}

/**
 * The uri to open `file` (as the graph names it: its real path) by, so that a click shows the
 * document the user has rather than a second copy under another path: the panel's own
 * document, else a document open already, else the path under the workspace folder it is in
 * (a folder opened through a symlink), else the file's own.
 */
export function editorUri(file: string, panel: GraphPanel | undefined): vscode.Uri {
  const own = panel && vscode.Uri.parse(panel.origin.uri);
  if (own && sameFile(own.fsPath, file)) return own;
  const docs = vscode.workspace.textDocuments.filter((d) => d.uri.scheme === "file");
  const open = docs.find((d) => path.normalize(d.uri.fsPath) === path.normalize(file)) ?? docs.find((d) => sameFile(d.uri.fsPath, file));
  if (open) return open.uri;
  return vscode.Uri.file(workspacePath(file));
}

/** `file` as the workspace folder it is in spells it: itself when a folder holds it by that
 * path (or none holds it), else its path under the folder its real path is in. */
function workspacePath(file: string): string {
  const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file").map((f) => f.uri.fsPath);
  if (folders.some((f) => insideByPath(file, f))) return file;
  const real = realPath(file);
  const folder = folders.find((f) => insideByPath(real, realPath(f)));
  return folder ? path.join(folder, path.relative(realPath(folder), real)) : file;
}

/** The column to open code in: where the file is shown already, else the panel's source editor. */
function columnFor(uri: vscode.Uri, panel: GraphPanel | undefined): vscode.ViewColumn {
  const shown = vscode.window.visibleTextEditors.find((e) => sameFile(e.document.uri.fsPath, uri.fsPath));
  if (shown?.viewColumn) return shown.viewColumn;
  const origin = panel && vscode.window.visibleTextEditors.find((e) => e.document.uri.toString() === panel.origin.uri);
  if (origin?.viewColumn) return origin.viewColumn;
  const panelColumn = panel?.viewColumn;
  return panelColumn === vscode.ViewColumn.One ? vscode.ViewColumn.Two : vscode.ViewColumn.One;
}

/** Open `file` at 1-based `line` and put the cursor at the start of its code (`preserveFocus`:
 * beside the graph, unasked: a file that would need a question is left alone). */
export async function revealLine(
  file: string,
  line: number,
  panel?: GraphPanel,
  preserveFocus = false,
  col?: number,
): Promise<vscode.TextEditor | undefined> {
  if (!(await mayOpen(file, panel, preserveFocus))) return undefined;
  return revealUri(editorUri(file, panel), file, line, panel, preserveFocus, col);
}

/**
 * Where a node of a comparison opens: a node of side "a" (before) of a comparison with HEAD
 * whose line is in the compared file, or in another file traced from HEAD's text with it, is
 * in HEAD's text, its read-only document; anything else opens where its site says (undefined).
 */
export function versionUri(origin: Pick<PanelOrigin, "uri" | "target">, file: string, side: "a" | "b" | undefined): vscode.Uri | undefined {
  if (side !== "a" || parseCompareTarget(origin.target)?.kind !== "head") return undefined;
  const doc = vscode.Uri.parse(origin.uri);
  if (doc.scheme !== "file") return undefined;
  // (the compared file as its document spells it: the text the comparison traced is kept by that path)
  if (sameFile(doc.fsPath, file)) return headUri(doc.fsPath);
  return tracedFromHead(doc.fsPath, file) ? headUri(file) : undefined;
}

async function revealUri(
  uri: vscode.Uri,
  file: string,
  line: number,
  panel?: GraphPanel,
  preserveFocus = false,
  col?: number,
): Promise<vscode.TextEditor | undefined> {
  let doc: vscode.TextDocument;
  try {
    doc = await vscode.workspace.openTextDocument(uri);
  } catch {
    void showWarning(`torchscope: can't open ${file}`);
    return undefined;
  }
  const l = editorLine(line, doc.lineCount);
  // (a line past the end, clamped to the last: not the call's line, no column on it)
  const pos = new vscode.Position(l, cursorColumn(doc.lineAt(l).text, l === line - 1 ? col : undefined));
  const editor = await vscode.window.showTextDocument(doc, {
    viewColumn: columnFor(uri, panel),
    preserveFocus,
    selection: new vscode.Range(pos, pos),
  });
  editor.revealRange(new vscode.Range(pos, pos), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  return editor;
}

/** Where a graph's lines of a file are now (the language server's torchscope/lines); null:
 * as they were. */
export type LinesNow = (graph: string, file: string) => Promise<LinePairs | null>;

/** The pairs of `panel`'s graph for `file`; null when the panel's graph is no trace the
 * server follows (a comparison) or it can't say. */
async function pairsOf(panel: GraphPanel | undefined, file: string, linesNow: LinesNow | undefined): Promise<LinePairs | null> {
  const graph = panel?.origin.graphPath;
  if (!graph || !linesNow) return null;
  return linesNow(graph, file).catch(() => null);
}

/** A node's line, where it is now if the file was edited since the trace; `side` "a": a
 * comparison's before-side, maybe in HEAD's version of the file (kept as traced). */
export async function revealSite(site: Site, panel?: GraphPanel, side?: "a" | "b", linesNow?: LinesNow): Promise<vscode.TextEditor | undefined> {
  const head = panel && versionUri(panel.origin, site.file, side);
  if (head) return revealUri(head, site.file, site.line, panel, false, site.col);
  const pairs = side === "a" ? null : await pairsOf(panel, site.file, linesNow);
  // (a line that moved since the trace reads as traced: its column holds)
  return revealLine(site.file, pairs ? lineNow(pairs, site.line) : site.line, panel, false, site.col);
}

/** Cursor moves in a Python editor → `highlightLine` to every panel (debounced), as the
 * line was when the panel's graph was traced, the file named as the graph names it (its real
 * path: the editor's may be under a folder opened through a symlink). */
export function followCursor(linesNow?: LinesNow): vscode.Disposable {
  let last: { file: string; line: number } | undefined;
  const send = debounce(() => {
    if (!last) return;
    const { file, line } = last;
    const traced = realPath(file); // (as the graph names it)
    for (const p of GraphPanel.all()) {
      void pairsOf(p, file, linesNow).then((pairs) => {
        if (last?.file === file && last.line === line) p.post({ type: "highlightLine", file: traced, line: pairs ? lineTraced(pairs, line) : line });
      });
    }
  }, 120);
  return vscode.window.onDidChangeTextEditorSelection((e) => {
    const doc = e.textEditor.document;
    if (doc.languageId !== "python" || doc.uri.scheme !== "file") return;
    const line = e.selections[0]!.active.line + 1;
    if (last && last.file === doc.uri.fsPath && last.line === line) return;
    last = { file: doc.uri.fsPath, line };
    send();
  });
}
