// A file's committed version (HEAD) through git: its text, for tracing the model as it was,
// and a read-only document of it (scheme `torchscope-head`), where a click on a node of the
// committed side opens its line. Our own `git show`, not VS Code's git extension: that one
// may be disabled (git.enabled: false), and a comparison must not depend on it.
import { execFile } from "node:child_process";
import * as path from "node:path";
import * as vscode from "vscode";

export const HEAD_SCHEME = "torchscope-head";

/** Why there is no committed text, in words for the user. */
export class NoHeadError extends Error {
  override name = "NoHeadError";
}

/** The git command that prints `file` as committed in HEAD: run in the file's folder, the
 * path relative to it (`HEAD:./x.py`), so the repository is found from there. */
export function headCommand(file: string): { cwd: string; args: string[] } {
  return { cwd: path.dirname(file), args: ["show", `HEAD:./${path.basename(file)}`] };
}

/** What a failed `git show HEAD:./file` means (pure: unit-tested with git's own messages). */
export function gitFailure(file: string, err: { code?: unknown; message?: string }, stderr: string): string {
  const name = path.basename(file);
  if (err.code === "ENOENT") return "git is not installed (or not on PATH): comparing with HEAD needs it";
  const text = stderr || err.message || "";
  if (/not a git repository/i.test(text)) return `${name} is not in a git repository: there is no HEAD to compare with`;
  if (/(invalid object name|ambiguous argument|bad revision|unknown revision)[^\n]*HEAD/i.test(text)) {
    return `the git repository of ${name} has no commit yet (no HEAD): commit once, then compare`;
  }
  if (/does not exist in 'HEAD'|exists on disk, but not in 'HEAD'/i.test(text)) {
    return `${name} is not in HEAD (it was never committed): there is no committed version to compare with`;
  }
  if (/dubious ownership/i.test(text)) return `git refuses the repository of ${name} (dubious ownership): see git config safe.directory`;
  const first = text.split("\n").find((l) => l.trim()) ?? "unknown error";
  return `git show HEAD:./${name} failed: ${first.trim()}`;
}

/** The text of `file` in HEAD; rejects with a NoHeadError saying why there is none. */
export function headText(file: string): Promise<string> {
  const { cwd, args } = headCommand(file);
  return new Promise((resolve, reject) => {
    execFile("git", args, { cwd, maxBuffer: 256 * 1024 * 1024, encoding: "utf8", windowsHide: true }, (err, stdout, stderr) => {
      if (err) reject(new NoHeadError(gitFailure(file, err as { code?: unknown; message?: string }, String(stderr ?? ""))));
      else resolve(stdout);
    });
  });
}

/** The read-only document of `file` as in HEAD. */
export function headUri(file: string): vscode.Uri {
  return vscode.Uri.file(file).with({ scheme: HEAD_SCHEME, query: "HEAD" });
}

/**
 * The `torchscope-head` documents: the text a comparison traced (so its lines are the ones the
 * graph points at, even after a new commit), else what git has in HEAD now.
 */
export class HeadDocuments implements vscode.TextDocumentContentProvider {
  private readonly traced = new Map<string, string>();

  /** The committed text a comparison traced for `file`. */
  remember(file: string, text: string): void {
    this.traced.set(path.normalize(file), text);
  }

  provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const file = path.normalize(uri.fsPath);
    const known = this.traced.get(file);
    return known !== undefined ? Promise.resolve(known) : headText(file);
  }

  register(): vscode.Disposable {
    return vscode.workspace.registerTextDocumentContentProvider(HEAD_SCHEME, this);
  }
}
