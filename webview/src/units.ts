// Numbers for people: "1.2 GFLOP", "3.1 MB", "4.2 ms", "0.0123". Pure.

/** In the unit of the value as rounded (999.96 KB is "1.0 MB"), one decimal below 100. */
function scaled(value: number, units: readonly string[], base: number): string {
  let v = value;
  for (let i = 0; ; i++) {
    const text = v.toFixed(i === 0 || Math.abs(Number(v.toFixed(1))) >= 100 ? 0 : 1);
    if (Math.abs(Number(text)) < base || i === units.length - 1) return `${text} ${units[i]}`;
    v /= base;
  }
}

const FLOP_UNITS = ["FLOP", "KFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP"] as const;
const BYTE_UNITS = ["B", "KB", "MB", "GB", "TB", "PB"] as const;

/** FLOPs (a multiply-add counts 2): "1.2 GFLOP". */
export function formatFlops(n: number): string {
  return scaled(n, FLOP_UNITS, 1000);
}

/** Bytes in decimal units, as the summary prints them: "3.1 MB". */
export function formatBytes(n: number): string {
  return scaled(n, BYTE_UNITS, 1000);
}

/** A duration given in nanoseconds: "850 µs", "4.2 ms", "1.3 s". */
export function formatTime(ns: number): string {
  if (Math.round(ns / 1e3) < 1000) return `${Math.round(ns / 1e3)} µs`;
  const ms = ns / 1e6;
  if (Math.round(ms) < 1000) return `${ms.toFixed(Number(ms.toFixed(1)) < 100 ? 1 : 0)} ms`;
  return `${(ns / 1e9).toFixed(1)} s`;
}

/** A tensor value: 4 significant digits, exponent notation when very large or small. */
export function formatValue(x: number | null | undefined): string {
  if (x === null || x === undefined) return "–";
  if (!Number.isFinite(x)) return String(x);
  if (x === 0) return "0";
  const a = Math.abs(x);
  if (Number.isInteger(x) && a < 1e6) return String(x);
  if (exponential(a)) return x.toExponential(2);
  return String(Number(x.toPrecision(4)));
}

/** Whether a magnitude is written with an exponent (1.23e+5, 4.56e-4). */
function exponential(magnitude: number): boolean {
  return magnitude >= 1e5 || magnitude < 1e-3;
}

/** Two ends of a range, with as many digits as it takes to tell them apart (QA: 19999.6 and
 * 20000.4 both read "20000" at 4 digits), up to 10, both in one notation; ends no 10 digits
 * tell apart are written as formatValue writes them. */
export function formatRange(lo: number | null | undefined, hi: number | null | undefined): [string, string] {
  const a = formatValue(lo);
  const b = formatValue(hi);
  if (typeof lo !== "number" || typeof hi !== "number" || !Number.isFinite(lo) || !Number.isFinite(hi) || lo === hi) return [a, b];
  if (a !== b && Number(a) !== Number(b)) return [a, b];
  const exp = exponential(Math.max(Math.abs(lo), Math.abs(hi)));
  const f = (x: number, digits: number) => (exp ? x.toExponential(digits - 1) : String(Number(x.toPrecision(digits))));
  for (let digits = 4; digits <= 10; digits++) {
    const [c, d] = [f(lo, digits), f(hi, digits)];
    if (Number(c) !== Number(d)) return [c, d];
  }
  return [a, b];
}

/** A fraction as a percentage: "12.5%", "<0.1%". */
export function formatShare(f: number): string {
  if (f <= 0) return "0%";
  if (f < 0.001) return "<0.1%";
  if (f >= 1) return "100%";
  // short of all is never written as all: 4,095 zeros of 4,096 is not a dead layer
  if (f >= 0.9995) return ">99.9%";
  return `${(f * 100).toFixed(f < 0.1 || f >= 0.9 ? 1 : 0)}%`;
}
