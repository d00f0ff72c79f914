// `make demo-vscode` / `make demo-stop`: VS Code (code-server) on 127.0.0.1 with the
// torchscope .vsix installed, opened on examples/ with the venv's python as the
// interpreter. Runs in the background; its process group id is kept in DIR/pid.
//   node scripts/demo-vscode.mjs start --code-server ENTRY --vsix FILE --dir DIR --port N --python PY --workspace WS
//   node scripts/demo-vscode.mjs stop --dir DIR
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

const [cmd, ...rest] = process.argv.slice(2);
const opt = {};
for (let i = 0; i < rest.length; i += 2) opt[rest[i].replace(/^--/, "")] = rest[i + 1];
const dir = resolve(opt.dir ?? ".cache/demo-vscode");
const pidFile = join(dir, "pid");

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function stop() {
  if (!existsSync(pidFile)) {
    console.log("no demo running");
    return;
  }
  const pid = Number(readFileSync(pidFile, "utf8"));
  if (alive(pid)) {
    process.kill(-pid, "SIGTERM");
    for (let i = 0; i < 30 && alive(pid); i++) await sleep(100);
    if (alive(pid)) process.kill(-pid, "SIGKILL");
  }
  rmSync(pidFile, { force: true });
  console.log("demo stopped");
}

async function start() {
  if (existsSync(pidFile) && alive(Number(readFileSync(pidFile, "utf8")))) await stop();
  const entry = resolve(opt["code-server"]);
  const ud = join(dir, "user-data");
  const ext = join(dir, "extensions");
  mkdirSync(join(ud, "User"), { recursive: true });
  mkdirSync(ext, { recursive: true });
  writeFileSync(
    join(ud, "User", "settings.json"),
    JSON.stringify(
      {
        "workbench.startupEditor": "none",
        "security.workspace.trust.enabled": false,
        "telemetry.telemetryLevel": "off",
        "git.enabled": false,
        "extensions.autoCheckUpdates": false,
        "extensions.autoUpdate": false,
        "torchscope.pythonPath": resolve(opt.python),
      },
      null,
      2,
    ),
  );
  const env = { ...process.env, XDG_CONFIG_HOME: join(dir, "xdg-config"), XDG_DATA_HOME: join(dir, "xdg-data") };
  const inst = spawnSync("node", [entry, "--user-data-dir", ud, "--extensions-dir", ext, "--install-extension", resolve(opt.vsix), "--force"], { env, encoding: "utf8" });
  if (inst.status !== 0) {
    console.error(inst.stdout, inst.stderr);
    process.exit(1);
  }
  const port = Number(opt.port ?? 8765);
  const logFile = join(dir, "code-server.log");
  const out = openSync(logFile, "w");
  const proc = spawn(
    "node",
    [entry, "--bind-addr", `127.0.0.1:${port}`, "--auth", "none", "--user-data-dir", ud, "--extensions-dir", ext,
      "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", "--disable-getting-started-override",
      "--ignore-last-opened", resolve(opt.workspace)],
    { env, detached: true, stdio: ["ignore", out, out] },
  );
  proc.unref();
  writeFileSync(pidFile, String(proc.pid));
  for (let i = 0; i < 600; i++) {
    const log = readFileSync(logFile, "utf8");
    if (log.includes("HTTP server listening")) break;
    if (!alive(proc.pid)) {
      console.error(log);
      process.exit(1);
    }
    await sleep(100);
  }
  const url = `http://127.0.0.1:${port}/?folder=${encodeURIComponent(resolve(opt.workspace))}`;
  console.log(`
VS Code with torchscope is running (log: ${logFile}).
Open ${url}
  then open mlp.py, convnet.py or broken.py, right-click inside the model and pick "Visualize forward pass".
Stop it with: make demo-stop`);
}

if (cmd === "start") await start();
else if (cmd === "stop") await stop();
else {
  console.error("usage: demo-vscode.mjs start|stop ...");
  process.exit(2);
}
