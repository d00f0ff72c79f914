// The one parameter-count format (webview/src/count.ts), shared by the viewer and the
// extension, checked against the Python side (summary.format_count) on the same vectors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { formatCount } from "../../../webview/src/count";

const CASES: [number, string][] = [
  [0, "0"],
  [7, "7"],
  [999, "999"],
  [1000, "1K"],
  [1049, "1K"],
  [1050, "1.1K"],
  [1234, "1.2K"],
  [1250, "1.3K"], // exactly 1.25: rounded half up, not to even
  [1500, "1.5K"],
  [65_000, "65K"],
  [786_432, "786.4K"],
  [999_949, "999.9K"],
  [999_950, "1M"], // not "1000K"
  [1_000_000, "1M"],
  [7_087_872, "7.1M"],
  [124_439_808, "124.4M"], // GPT-2
  [999_999_999, "1B"],
  [70_553_706_496, "70.6B"], // Llama 2 70B
  [1_000_000_000_000, "1T"],
  [1_234_000_000_000_000, "1234T"],
];

test("counts read the same everywhere: the integer below 1000, else K/M/B/T with one decimal", () => {
  for (const [n, text] of CASES) assert.equal(formatCount(n), text, `formatCount(${n})`);
});

test("a count that is not one reads as ?", () => {
  for (const n of [-1, Number.NaN, Number.POSITIVE_INFINITY]) assert.equal(formatCount(n), "?");
});

const PYTHON = join(import.meta.dirname, "..", "..", "..", ".venv", "bin", "python");

test("the Python side (torchscope.summary.format_count) writes every count the same", { skip: !existsSync(PYTHON) && "no venv python" }, () => {
  const code = "import json,sys\nfrom torchscope.summary import format_count\nprint(json.dumps([format_count(n) for n in json.loads(sys.argv[1])]))";
  const out = execFileSync(PYTHON, ["-c", code, JSON.stringify(CASES.map(([n]) => n))], { encoding: "utf8" });
  assert.deepEqual(
    JSON.parse(out),
    CASES.map(([, text]) => text),
  );
});
