// The main thread's tasks of a standalone page while it starts, from a Chromium trace: each
// task's wall time and the thread's own CPU time in it. On a loaded machine a task's wall
// time is mostly waiting for a core (what the 'longtask' observer reports); its CPU time is
// the work the page did in it, which the page's code decides.
//   CHROMIUM=/usr/bin/chromium node --import tsx bench/viewer/task_cpu.ts PAGE.html [PAGE.html …] [--runs 3]
// Prints, per page and run, the marks and the tasks after `torchscope:boot` longer than 20 ms.
import { launch } from "../../tests/chromium";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

interface TraceEvent {
  name: string;
  cat?: string;
  ph: string;
  ts: number;
  dur?: number;
  tdur?: number;
  pid: number;
  tid: number;
}

const args = process.argv.slice(2);
const runsAt = args.indexOf("--runs");
const RUNS = runsAt >= 0 ? Number(args[runsAt + 1]) : 3;
const pages = args.filter((a, i) => !a.startsWith("--") && (runsAt < 0 || i !== runsAt + 1));

async function main(): Promise<void> {
  const browser = await launch();
  for (const file of pages) {
    for (let run = 0; run < RUNS; run++) {
      const page = await browser.newPage();
      await browser.startTracing(page, { categories: ["disabled-by-default-devtools.timeline", "blink.user_timing"] });
      await page.goto(pathToFileURL(resolve(file)).href);
      await page.waitForSelector('#torchscope[data-state="ready"] svg.ts-svg', { timeout: 120_000 });
      await page.waitForTimeout(300);
      const events = (JSON.parse((await browser.stopTracing()).toString()) as { traceEvents: TraceEvent[] }).traceEvents;
      const marks = events.filter((e) => e.cat?.includes("blink.user_timing") && e.name.startsWith("torchscope:"));
      const boot = marks.find((m) => m.name === "torchscope:boot");
      if (!boot) throw new Error(`${file}: no torchscope:boot mark`);
      const tasks = events.filter(
        (e) => e.name === "RunTask" && e.ph === "X" && e.pid === boot.pid && e.tid === boot.tid && e.ts + (e.dur ?? 0) >= boot.ts,
      );
      const ms = (us: number | undefined): number => Math.round((us ?? 0) / 1000);
      const long = tasks.filter((t) => (t.dur ?? 0) > 20_000);
      const mostCpu = Math.max(0, ...tasks.map((t) => t.tdur ?? 0));
      const longestWall = Math.max(0, ...tasks.map((t) => t.dur ?? 0));
      console.log(
        JSON.stringify({
          page: file,
          run,
          marks: marks.map((m) => `${m.name.slice(11)} ${ms(m.ts - boot.ts)}`).join(", "),
          longest_task_wall_ms: ms(longestWall),
          most_cpu_in_one_task_ms: ms(mostCpu),
          tasks_over_20ms: long.map((t) => `at ${ms(t.ts - boot.ts)}: wall ${ms(t.dur)} cpu ${ms(t.tdur)}`).join("; "),
        }),
      );
      await page.close();
    }
  }
  await browser.close();
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
