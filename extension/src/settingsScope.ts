// Open a setting where its value in use is set, so that an edit there takes effect: the
// Workspace settings when the workspace sets it, a folder's settings.json when that folder of a
// multi-root workspace does, else the User settings. (Settings opened on the User tab while
// the workspace set the value showed an empty field, and a value typed there changed nothing.)
import * as vscode from "vscode";

export type SettingScope = "user" | "workspace" | "workspace-folder";

/** What `WorkspaceConfiguration.inspect` tells of a setting (the scopes that matter here). */
export interface ScopedValues {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/** The most specific scope that sets a value (an empty string is a value: it hides the
 * user's). A folder's own settings count only in a multi-root workspace: with one folder
 * open, they are the workspace's; and only for a setting each folder may set (`perFolder`:
 * scope "resource"): VS Code uses no folder's value of a window's setting. Set nowhere: the
 * user's. */
export function scopeInUse(values: ScopedValues | undefined, multiRoot: boolean, perFolder = true): SettingScope {
  if (multiRoot && !perFolder) return values?.workspaceValue !== undefined ? "workspace" : "user";
  if (multiRoot && values?.workspaceFolderValue !== undefined) return "workspace-folder";
  if (values?.workspaceValue !== undefined || values?.workspaceFolderValue !== undefined) return "workspace";
  return "user";
}

/** The settings each folder may set (package.json: `"scope": "resource"`); the others are
 * the window's, and VS Code ignores a folder's value of them. */
export const PER_FOLDER: ReadonlySet<string> = new Set(["torchscope.pythonPath"]);

/** Open the settings at `key` ("section.name") where its value in use for `resource` is set. */
export async function openSettingInUse(key: string, resource?: vscode.Uri): Promise<void> {
  const dot = key.lastIndexOf(".");
  const values = vscode.workspace.getConfiguration(key.slice(0, dot), resource).inspect(key.slice(dot + 1));
  const scope = scopeInUse(values, !!vscode.workspace.workspaceFile, PER_FOLDER.has(key));
  const folder = resource ? vscode.workspace.getWorkspaceFolder(resource) : vscode.workspace.workspaceFolders?.[0];
  if (scope === "workspace-folder" && folder && (await showKey(vscode.Uri.joinPath(folder.uri, ".vscode", "settings.json"), key))) return;
  if (scope === "user") await vscode.commands.executeCommand("workbench.action.openGlobalSettings", { query: key });
  else await vscode.commands.executeCommand("workbench.action.openWorkspaceSettings", { query: key });
}

/** A settings.json in the editor with the cursor on `key`'s line; false when it can't be opened. */
async function showKey(file: vscode.Uri, key: string): Promise<boolean> {
  let doc: vscode.TextDocument;
  try {
    doc = await vscode.workspace.openTextDocument(file);
  } catch {
    return false;
  }
  const line = Math.max(
    0,
    doc
      .getText()
      .split("\n")
      .findIndex((l) => l.includes(`"${key}"`)),
  );
  const at = new vscode.Position(line, 0);
  await vscode.window.showTextDocument(doc, { selection: new vscode.Range(at, at) });
  return true;
}
