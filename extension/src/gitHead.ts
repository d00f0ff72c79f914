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

/** What a git command that failed said: its error and its stderr. */
interface GitFailed {
  err: { code?: unknown; message?: string };
  stderr: string;
}

/** A git command's stdout; rejects with a GitFailed. */
function gitOut(cwd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile("git", args, { cwd, maxBuffer: 256 * 1024 * 1024, encoding: "utf8", windowsHide: true }, (err, stdout, stderr) => {
      if (err) reject({ err, stderr: String(stderr ?? "") } satisfies GitFailed);
      else resolve(stdout);
    });
  });
}

/** The text of `file` in HEAD; rejects with a NoHeadError saying why there is none. */
export function headText(file: string): Promise<string> {
  const { cwd, args } = headCommand(file);
  return gitOut(cwd, args).catch((f: GitFailed) => {
    throw new NoHeadError(gitFailure(file, f.err, f.stderr));
  });
}

/** Another file as HEAD has it, traced with the compared file: `text` null for a file HEAD
 * does not have (added since). The trace request's `texts` (docs/protocol.md). */
export interface HeadFile {
  file: string;
  text: string | null;
}

/** More changed Python files than this: none of them is traced from HEAD (said in the log). */
export const MAX_HEAD_FILES = 200;

/** The Python files `git diff --no-renames --name-status -z HEAD -- *.py` lists, their paths
 * from the repository's top, and whether HEAD has them (pure: unit-tested). */
export function changedFiles(out: string): { file: string; inHead: boolean }[] {
  const parts = out.split("\0");
  const found: { file: string; inHead: boolean }[] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const status = parts[i]!;
    const file = parts[i + 1]!;
    if (status && file) found.push({ file, inHead: !status.startsWith("A") });
  }
  return found;
}

/**
 * The other Python files of `file`'s repository whose saved text differs from HEAD's (staged
 * or not), as HEAD has them: Compare with HEAD traces the model's imports from these too, so
 * an edit in a module the compared file imports shows. Rejects when git can't say, or when
 * more than MAX_HEAD_FILES changed; the comparison then takes the other files from disk.
 */
export async function headTexts(file: string): Promise<HeadFile[]> {
  const git = (cwd: string, args: string[]) =>
    gitOut(cwd, args).catch((f: GitFailed) => {
      throw new Error((f.stderr || f.err.message || "git failed").split("\n", 1)[0]);
    });
  const top = (await git(path.dirname(file), ["rev-parse", "--show-toplevel"])).trim();
  const changed = changedFiles(await git(top, ["diff", "--no-renames", "--name-status", "-z", "HEAD", "--", "*.py"]));
  const self = fileKey(file);
  const others = changed.filter((c) => fileKey(path.join(top, c.file)) !== self);
  if (others.length > MAX_HEAD_FILES) {
    throw new Error(`${others.length} Python files changed since HEAD (more than ${MAX_HEAD_FILES})`);
  }
  const texts: HeadFile[] = [];
  for (let i = 0; i < others.length; i += GIT_AT_ONCE) {
    const some = others.slice(i, i + GIT_AT_ONCE);
    const read = some.map(async (c) => ({ file: path.join(top, c.file), text: c.inHead ? await git(top, ["show", `HEAD:${c.file}`]) : null }));
    texts.push(...(await Promise.all(read)));
  }
  return texts;
}

const GIT_AT_ONCE = 8; // `git show` processes at a time (a comparison runs again on every save)

/** A file as the maps here key it: normalised, and case-folded where paths are (Windows). */
function fileKey(file: string): string {
  const n = path.normalize(file);
  return process.platform === "win32" ? n.toLowerCase() : n;
}

// the compared file → the other files its last comparison with HEAD traced from HEAD's text
const tracedWith = new Map<string, Set<string>>();

/** Whether a line of `file` on the HEAD side of a comparison of `compared` is HEAD's (the
 * comparison traced `file` from HEAD's text). */
export function tracedFromHead(compared: string, file: string): boolean {
  return tracedWith.get(fileKey(compared))?.has(fileKey(file)) ?? false;
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

  /** The committed text a comparison traced for `file`, and those of the other files it
   * traced from HEAD (`others`). */
  remember(file: string, text: string, others: readonly HeadFile[] = []): void {
    this.traced.set(fileKey(file), text);
    const files = new Set<string>();
    for (const o of others) {
      if (o.text === null) continue;
      this.traced.set(fileKey(o.file), o.text);
      files.add(fileKey(o.file));
    }
    tracedWith.set(fileKey(file), files);
  }

  provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const file = path.normalize(uri.fsPath);
    const known = this.traced.get(fileKey(file));
    return known !== undefined ? Promise.resolve(known) : headText(file);
  }

  register(): vscode.Disposable {
    return vscode.workspace.registerTextDocumentContentProvider(HEAD_SCHEME, this);
  }
}
