// The workspace's environment file: dotenv as the Python extension reads it, where it is, and
// how its variables reach the runner (through the language server, which keeps its own).
// biome-ignore-all lint/suspicious/noTemplateCurlyInString: dotenv text, where ${NAME} is the syntax under test
import { strict as assert } from "node:assert";
import { mkdtempSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";
import { DEFAULT_ENV_FILE, envFilePath, parseEnvFile, readEnvFile, runnerEnv } from "../../../extension/src/envFile";

describe("parseEnvFile", () => {
  it("reads variables, comments, export, quotes and blank lines", () => {
    const text = [
      "# a comment",
      "",
      "PYTHONPATH=src",
      "export MODEL_DIM = 512",
      "NAME='a # literal ${HOME}'",
      'GREETING="two\\nlines \\"quoted\\""',
      "PLAIN=value # trailing comment",
      "EMPTY=",
      "URL=http://host/#anchor",
    ].join("\r\n");
    const { vars, skipped } = parseEnvFile(text, {});
    assert.deepEqual(vars, {
      PYTHONPATH: "src",
      MODEL_DIM: "512",
      NAME: "a # literal ${HOME}",
      GREETING: 'two\nlines "quoted"',
      PLAIN: "value",
      EMPTY: "",
      URL: "http://host/#anchor",
    });
    assert.deepEqual(skipped, []);
  });

  it("fills ${NAME} from the variables above, then the base environment; \\$ stays a dollar", () => {
    const { vars } = parseEnvFile('ROOT=/data\nDATA=${ROOT}/train\nHOME_DIR="${HOME}/x"\nCOST=\\$5\nNONE=${MISSING}', { HOME: "/home/u" });
    assert.deepEqual(vars, { ROOT: "/data", DATA: "/data/train", HOME_DIR: "/home/u/x", COST: "$5", NONE: "" });
  });

  it("names the lines it could not read and keeps the rest", () => {
    const { vars, skipped } = parseEnvFile('GOOD=1\nnot a variable\nBAD="no closing quote\n9LIVES=cat\nALSO=2', {});
    assert.deepEqual(vars, { GOOD: "1", ALSO: "2" });
    assert.deepEqual(skipped, [2, 3, 4]);
  });
});

describe("envFilePath", () => {
  it("defaults to the workspace folder's .env", () => {
    assert.equal(envFilePath(undefined, "/w"), path.join("/w", ".env"));
    assert.equal(envFilePath("", "/w"), path.join("/w", ".env"));
    assert.equal(envFilePath(DEFAULT_ENV_FILE, undefined), undefined);
  });
  it("fills the folder, the home folder, and reads a relative path from the folder", () => {
    assert.equal(envFilePath("${workspaceFolder}/config/dev.env", "/w"), path.join("/w", "config", "dev.env"));
    assert.equal(envFilePath("~/envs/torch.env", "/w"), path.join(homedir(), "envs", "torch.env"));
    assert.equal(envFilePath("local.env", "/w"), path.join("/w", "local.env"));
    assert.equal(envFilePath("/etc/project.env", undefined), "/etc/project.env");
  });
});

describe("readEnvFile and withEnvFile", () => {
  it("reads nothing from a file that is not there", () => {
    assert.deepEqual(readEnvFile(path.join(tmpdir(), "no-such-dir-torchscope", ".env"), {}), { vars: {}, skipped: [] });
    assert.deepEqual(readEnvFile(undefined, {}), { vars: {}, skipped: [] });
  });
  it("hands the file's variables to the runner, PYTHONPATH entries from the folder", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "torchscope-env-"));
    const file = path.join(dir, ".env");
    writeFileSync(file, `PYTHONPATH=src${path.delimiter}/abs/lib\nOMP_NUM_THREADS=1\n`);
    const read = readEnvFile(file, {});
    assert.equal(read.file, file);
    assert.deepEqual(JSON.parse(runnerEnv(read.vars, dir)!), {
      PYTHONPATH: [path.join(dir, "src"), "/abs/lib"].join(path.delimiter),
      OMP_NUM_THREADS: "1",
    });
    assert.equal(runnerEnv({}, dir), undefined, "no file, no variables: nothing for the runner");
  });
});
