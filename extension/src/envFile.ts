// The workspace's environment file (`python.envFile`, `${workspaceFolder}/.env` by default):
// the variables the Python extension gives a program it runs or debugs (`PYTHONPATH=src`,
// `MODEL_DIM=512`). The runner that imports the user's files gets them too (through the
// language server, which keeps its own environment), so that a trace sees the environment
// "Run Python File" gives.
import * as fs from "node:fs";
import * as path from "node:path";
import { expandPath } from "./interpreter";

const FOLDER = "$" + "{workspaceFolder}"; // VS Code's variable, not a template placeholder
export const DEFAULT_ENV_FILE = `${FOLDER}/.env`;
/** The server's variable holding them for its runner (runner_client.py). */
export const RUNNER_ENV = "TORCHSCOPE_RUNNER_ENV";

export interface EnvFile {
  vars: Record<string, string>;
  /** 1-based numbers of lines that are neither a variable, a comment nor blank. */
  skipped: number[];
}

const LINE = /^(?:export\s+)?([A-Za-z_][\w.-]*)\s*=\s*(.*)$/;
const ESCAPES: Record<string, string> = { n: "\n", r: "\r", t: "\t", '"': '"', "\\": "\\", $: "\\$" };

/** Parse dotenv text: `KEY=value`, `export KEY=value`, `#` comments (a whole line, or after
 * a space in an unquoted value), 'single' (literal) and "double" quoted values (escapes),
 * `${NAME}` taken from the variables above it, then from `base`; `\$` is a literal `$`. */
export function parseEnvFile(text: string, base: Record<string, string | undefined>): EnvFile {
  const vars: Record<string, string> = {};
  const skipped: number[] = [];
  const lookup = (name: string): string => vars[name] ?? base[name] ?? "";
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith("#")) return;
    const m = LINE.exec(line);
    if (!m) {
      skipped.push(i + 1);
      return;
    }
    const [, key, rest] = m as unknown as [string, string, string];
    const value = readValue(rest);
    if (value === undefined) {
      skipped.push(i + 1);
      return;
    }
    vars[key] = value.literal ? value.text : substitute(value.text, lookup);
  });
  return { vars, skipped };
}

function readValue(rest: string): { text: string; literal: boolean } | undefined {
  const quote = rest[0];
  if (quote === "'") {
    const end = rest.indexOf("'", 1);
    return end < 0 ? undefined : { text: rest.slice(1, end), literal: true };
  }
  if (quote === '"') {
    let text = "";
    for (let i = 1; i < rest.length; i++) {
      const c = rest[i]!;
      if (c === '"') return { text, literal: false };
      if (c === "\\" && i + 1 < rest.length) {
        const next = rest[++i]!;
        text += ESCAPES[next] ?? `\\${next}`;
      } else text += c;
    }
    return undefined; // no closing quote
  }
  const comment = rest.search(/\s#/);
  return { text: (comment < 0 ? rest : rest.slice(0, comment)).trim(), literal: false };
}

function substitute(text: string, lookup: (name: string) => string): string {
  return text.replace(/\\\$|\$\{([A-Za-z_]\w*)\}/g, (_all, name: string | undefined) => (name === undefined ? "$" : lookup(name)));
}

/** The env file's path: the setting with `${workspaceFolder}` and `~` filled in, relative to
 * the workspace folder; undefined without a folder to resolve it against. */
export function envFilePath(setting: string | undefined, folder: string | undefined): string | undefined {
  const spec = setting?.trim() || DEFAULT_ENV_FILE;
  if (spec.includes(FOLDER) && !folder) return undefined;
  const filled = expandPath(spec, folder); // (as torchscope.pythonPath is read)
  if (path.isAbsolute(filled)) return filled;
  return folder ? path.join(folder, filled) : undefined;
}

/** The variables of the file at `file` (none when it does not exist). */
export function readEnvFile(file: string | undefined, base: Record<string, string | undefined>): EnvFile & { file?: string } {
  if (!file) return { vars: {}, skipped: [] };
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch {
    return { vars: {}, skipped: [] };
  }
  return { ...parseEnvFile(text, base), file };
}

/** The variables for the runner (which imports the user's code), as the server's
 * TORCHSCOPE_RUNNER_ENV: a JSON object, PYTHONPATH's relative entries made absolute from the
 * workspace folder; undefined when there are none. Not for the server's own environment: a
 * PYTHONHOME or PYTHONPATH meant for the project must not stop the language server. */
export function runnerEnv(vars: Record<string, string>, folder: string | undefined): string | undefined {
  if (Object.keys(vars).length === 0) return undefined;
  const out = { ...vars };
  if (vars.PYTHONPATH !== undefined) {
    out.PYTHONPATH = vars.PYTHONPATH.split(path.delimiter)
      .filter(Boolean)
      .map((p) => (folder && !path.isAbsolute(p) ? path.resolve(folder, p) : p))
      .join(path.delimiter);
  }
  return JSON.stringify(out);
}
