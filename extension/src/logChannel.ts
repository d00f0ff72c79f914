// What reaches the torchscope log, one line per event with its real level. The log is a
// LogOutputChannel, which stamps every line with its own time and level. The language client
// writes to the channel it is given as to a plain one: "[Info  - 10:12:13] message" lines
// (the server's window/logMessage and the client's own news) and the server's stderr in raw
// chunks; through a plain appendLine each would land as "[info] [Error - 10:12:13] …". The
// ClientLog below re-levels them without the client's stamp. A normal stop of the server is
// news, not an error. And each trace is one line, a warning when the forward raised.
import type * as vscode from "vscode";
import type { TraceSummary } from "./protocol";

export type Level = "error" | "warn" | "info" | "debug" | "trace";

/** What a caught error says, for a log line or a message. */
export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** A line the language client wrote: its level and message, without the client's stamp. */
export interface ClientLine {
  level: Level;
  message: string;
  /** False for a line with no stamp: the rest of the previous message (a stack), or stderr. */
  stamped: boolean;
}

const CLIENT_LEVELS: Record<string, Level> = { Error: "error", Warn: "warn", Info: "info", Debug: "debug", Trace: "trace" };

/** The client's "[Name  - time] message" line (see vscode-languageclient's logOutputMessage). */
export function parseClientLine(line: string, previous: Level = "info"): ClientLine {
  const m = /^\[(Error|Warn|Info|Debug|Trace) *- [^\]\n]*\] ?([\s\S]*)$/.exec(line);
  if (!m) return { level: previous, message: line, stamped: false };
  const message = m[2]!;
  let level = CLIENT_LEVELS[m[1]!]!;
  // The client says "Server process exited with code 0." as an error whenever the server
  // ends, also after a clean shutdown (a restart, a settings change): that is news.
  if (level === "error" && /^Server process exited with code 0\.?$/.test(message)) level = "info";
  return { level, message, stamped: true };
}

/** A line of the server's stderr: Python's logging ("WARNING pygls…: …") and tracebacks. */
export function stderrLevel(line: string, previous: Level): Level {
  if (/^(ERROR|CRITICAL)\b|^Traceback \(most recent call last\)/.test(line)) return "error";
  if (/^WARNING\b/.test(line)) return "warn";
  if (/^(INFO|DEBUG)\b/.test(line)) return "info";
  // An indented line or an exception's last line goes with what it belongs to.
  return /^\s/.test(line) || previous === "error" ? previous : "info";
}

/**
 * The channel handed to the language client: what it writes goes to `log` at the level it
 * meant, each line once. Stderr chunks are cut into lines.
 */
export class ClientLog implements vscode.OutputChannel {
  readonly name: string;
  private last: Level = "info";
  private partial = "";

  constructor(private readonly log: vscode.LogOutputChannel) {
    this.name = log.name;
  }

  appendLine(value: string): void {
    this.flush();
    const line = parseClientLine(value, this.last);
    this.last = line.level;
    this.write(line.level, line.message);
  }

  /** Raw chunks: the server's stderr (and stdout, which the server keeps for the protocol). */
  append(value: string): void {
    const text = this.partial + value;
    const lines = text.split(/\r?\n/);
    this.partial = lines.pop() ?? "";
    for (const l of lines) this.stderrLine(l);
  }

  private stderrLine(line: string): void {
    if (!line.trim()) return;
    this.last = stderrLevel(line, this.last);
    this.write(this.last, `server: ${line}`);
  }

  private flush(): void {
    if (this.partial) this.stderrLine(this.partial);
    this.partial = "";
  }

  private write(level: Level, message: string): void {
    this.log[level](message);
  }

  replace(value: string): void {
    this.appendLine(value);
  }
  clear(): void {
    this.log.clear();
  }
  show(columnOrPreserve?: unknown, preserveFocus?: boolean): void {
    this.log.show(typeof columnOrPreserve === "boolean" ? columnOrPreserve : preserveFocus);
  }
  hide(): void {
    this.log.hide();
  }
  /** The log belongs to the extension, not to one language client. */
  dispose(): void {
    this.flush();
  }
}

function firstLine(text: string): string {
  const line = text.split("\n", 1)[0]!.trim();
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

function baseName(file: string): string {
  return file.split(/[\\/]/).pop() ?? file;
}

/**
 * The one line a trace leaves in the log: what was traced, from which input, how long it took
 * (`timing`: what goes in the brackets after the tracer's own time, e.g. "request 120 ms").
 * A forward that raised is a warning that says so first.
 */
export function tracedLine(target: string, s: TraceSummary, timing: string): { level: "info" | "warn"; text: string } {
  const done = `${s.nodes} nodes, ${s.ops} ops in ${s.trace_ms} ms (${timing})`;
  const skipped = s.skipped?.length
    ? `; not run at import: ${s.skipped
        .slice(0, 2)
        .map((x) => `line ${x.line}: ${x.text.trim()}`)
        .join(", ")}${s.skipped.length > 2 ? ` (+${s.skipped.length - 2} more)` : ""}`
    : "";
  const input = `input ${s.input}${skipped}`;
  const err = s.error;
  if (!err) return { level: "info", text: `traced ${target}: ${done}; ${input}` };
  const where = err.file && err.line ? ` at ${baseName(err.file)}:${err.line}` : "";
  return { level: "warn", text: `traced ${target}: the forward raised ${err.type}: ${firstLine(err.message)}${where}; ${done}; ${input}` };
}

/** Lines of each level a `torchscope.logLevel` setting lets through ("warning": errors and warnings). */
const RANK: Record<Level, number> = { error: 0, warn: 1, info: 2, debug: 3, trace: 4 };

/** vscode.LogLevel of each level: the channel writes a line when its own level is at most this. */
const CHANNEL_LEVEL: Record<Level, number> = { trace: 1, debug: 2, info: 3, warn: 4, error: 5 };

/** The setting's level as the channel names it ("warning" → "warn"; anything else: info). */
export function settingLevel(setting: unknown): Level {
  if (setting === "warning") return "warn";
  return setting === "error" || setting === "info" || setting === "debug" ? setting : "info";
}

/**
 * `log` writing only the lines `level()` lets through (read at each line: a settings change
 * holds at once), for the extension's own lines as for the server's: `torchscope.logLevel`
 * "error" is errors only, whoever writes them.
 */
export function levelled(log: vscode.LogOutputChannel, level: () => Level): vscode.LogOutputChannel {
  return new Proxy(log, {
    get(target, prop) {
      if (typeof prop === "string" && Object.hasOwn(RANK, prop)) {
        const rank = RANK[prop as Level];
        return (...args: unknown[]) => {
          if (rank > RANK[level()]) return;
          // The channel drops lines below its own level (Info, unless "Developer: Set Log
          // Level" says otherwise): a debug line the setting asks for is written as info,
          // marked, rather than lost.
          if (target.logLevel > CHANNEL_LEVEL[prop as Level]) target.info(`${prop}: ${String(args[0])}`, ...args.slice(1));
          else (target[prop as Level] as (...a: unknown[]) => void)(...args);
        };
      }
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
