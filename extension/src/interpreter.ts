// Which Python runs the language server (and, through it, the user's model): the
// `torchscope.pythonPath` setting when set, else the interpreter the Python extension
// selected, else (without that extension) its `python.defaultInterpreterPath` setting, else
// `python3`. An explicit setting wins, as in the Python tools extension
// template: it is the one choice the user made for torchscope alone.
import * as os from "node:os";
import * as vscode from "vscode";
import { errorText } from "./logChannel";
import { openSettingInUse } from "./settingsScope";

export interface Interpreter {
  path: string;
  source: "setting" | "python-extension" | "python-setting" | "default";
}

/** Pure choice among the candidates (tested without VS Code): `pythonSetting` is the Python
 * extension's `python.defaultInterpreterPath`, read when that extension is not there. */
export function chooseInterpreter(setting: string | undefined, fromPythonExt: string | undefined, pythonSetting?: string): Interpreter {
  if (setting?.trim()) return { path: setting.trim(), source: "setting" };
  if (fromPythonExt) return { path: fromPythonExt, source: "python-extension" };
  // ("python", its default, is no choice of the user's)
  if (pythonSetting?.trim() && pythonSetting.trim() !== "python") return { path: pythonSetting.trim(), source: "python-setting" };
  return { path: "python3", source: "default" };
}

/** `~` and `${workspaceFolder}` in a configured path. */
export function expandPath(p: string, workspaceFolder: string | undefined, home = os.homedir()): string {
  let out = p.trim();
  if (out === "~" || out.startsWith("~/")) out = home + out.slice(1);
  if (workspaceFolder) out = out.replace(/\$\{workspaceFolder\}/g, workspaceFolder);
  return out;
}

interface PythonEnvironmentsApi {
  getActiveEnvironmentPath(resource?: vscode.Uri): { id: string; path: string };
  resolveEnvironment(env: { id: string; path: string } | string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
  onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
}

interface PythonExtensionApi {
  environments?: PythonEnvironmentsApi;
}

/** Where a failure of the Python extension goes (the log): the interpreter falls back then,
 * and the user must be able to read why theirs was not used. */
type Warn = (message: string) => void;

async function pythonExtensionApi(warn?: Warn): Promise<PythonEnvironmentsApi | undefined> {
  const ext = vscode.extensions.getExtension<PythonExtensionApi>("ms-python.python");
  if (!ext) return undefined;
  try {
    const api = ext.isActive ? ext.exports : await ext.activate();
    return api?.environments;
  } catch (e) {
    warn?.(`the Python extension did not start (${errorText(e)}): its selected interpreter is not used`);
    return undefined;
  }
}

async function fromPythonExtension(resource: vscode.Uri | undefined, warn?: Warn): Promise<string | undefined> {
  const api = await pythonExtensionApi(warn);
  if (!api) return undefined;
  try {
    const active = api.getActiveEnvironmentPath(resource);
    const env = await api.resolveEnvironment(active);
    return env?.executable.uri?.fsPath ?? active.path;
  } catch (e) {
    warn?.(`the Python extension could not say its selected interpreter (${errorText(e)}): it is not used`);
    return undefined;
  }
}

/** The interpreter to run: torchscope.pythonPath, else the Python extension's, else
 * python.defaultInterpreterPath, else python3; `warn`: told when the Python extension fails. */
export async function resolveInterpreter(resource?: vscode.Uri, warn?: Warn): Promise<Interpreter> {
  const folder = resource ? vscode.workspace.getWorkspaceFolder(resource) : vscode.workspace.workspaceFolders?.[0];
  const setting = vscode.workspace.getConfiguration("torchscope", resource).get<string>("pythonPath", "");
  // The setting wins: then the Python extension (which may take seconds to activate) isn't asked.
  if (setting.trim()) return chooseInterpreter(expandPath(setting, folder?.uri.fsPath), undefined);
  const fromExtension = await fromPythonExtension(resource, warn);
  if (fromExtension) return chooseInterpreter("", fromExtension);
  const pythonSetting = vscode.workspace.getConfiguration("python", resource).get<string>("defaultInterpreterPath", "");
  return chooseInterpreter("", undefined, pythonSetting ? expandPath(pythonSetting, folder?.uri.fsPath) : "");
}

/** The settings that chose (or, changed, would change) the interpreter `inUse`: torchscope.pythonPath
 * always (set, it wins); python.defaultInterpreterPath unless torchscope.pythonPath or the Python
 * extension chose it (the Python extension reads that setting itself, and its interpreter change
 * event says when it picks another). */
export function interpreterSettings(inUse: Interpreter | undefined): string[] {
  if (inUse?.source === "setting" || inUse?.source === "python-extension") return ["torchscope.pythonPath"];
  return ["torchscope.pythonPath", "python.defaultInterpreterPath"];
}

/** Fires when the Python extension's selected interpreter changes (never, without it). */
export async function onInterpreterChange(listener: () => void): Promise<vscode.Disposable> {
  const api = await pythonExtensionApi();
  return api ? api.onDidChangeActiveEnvironmentPath(() => listener()) : new vscode.Disposable(() => undefined);
}

/** Open the Python extension's picker when it is installed, else the setting, where its value
 * in use is set (the workspace's settings when the workspace sets it). */
export async function pickInterpreter(): Promise<void> {
  if (vscode.extensions.getExtension("ms-python.python")) {
    await vscode.commands.executeCommand("python.setInterpreter");
  } else {
    await openSettingInUse("torchscope.pythonPath", vscode.window.activeTextEditor?.document.uri);
  }
}
