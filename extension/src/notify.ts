// Messages to the user, as text. VS Code renders `[label](target)` in a notification's text as
// a link, `command:` targets included, and torchscope's messages carry text from outside it:
// paths and names from a graph file someone else made, the model's own error messages. A
// crafted one would be a link that runs a command at a click. No message of ours means a link,
// so every one goes through `asText`.
import * as vscode from "vscode";

/** `text` with every `](` broken by a zero-width space: what it says, with no link in it. */
export function asText(text: string): string {
  return text.replace(/\]\(/g, "]\u200b(");
}

type Show = typeof vscode.window.showInformationMessage;

/** One of vscode.window's show*Message, its message (and a modal's `detail`) made text
 * (same overloads). */
function shown(pick: () => Show): Show {
  return ((message: string, ...rest: unknown[]) =>
    (pick() as (...a: unknown[]) => Thenable<unknown>)(asText(message), ...rest.map(detailAsText))) as Show;
}

function detailAsText(arg: unknown): unknown {
  const detail = (arg as vscode.MessageOptions | undefined)?.detail;
  return typeof arg === "object" && arg !== null && typeof detail === "string" ? { ...arg, detail: asText(detail) } : arg;
}

export const showInformation = shown(() => vscode.window.showInformationMessage);
export const showWarning = shown(() => vscode.window.showWarningMessage);
export const showError = shown(() => vscode.window.showErrorMessage);
