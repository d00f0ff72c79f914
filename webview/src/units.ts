// Numbers for people: "1.2 GFLOP", "3.1 MB", "4.2 ms", "0.0123". Pure.

function scaled(value: number, units: readonly string[], base: number): string {
  let v = value;
  let i = 0;
  while (Math.abs(v) >= base && i < units.length - 1) {
    v /= base;
    i++;
  }
  if (i === 0) return `${Math.round(v)} ${units[0]}`;
  return `${v.toFixed(Math.abs(v) < 100 ? 1 : 0)} ${units[i]}`;
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
  if (ns < 1e6) return `${Math.round(ns / 1e3)} µs`;
  if (ns < 1e9) {
    const ms = ns / 1e6;
    return `${ms.toFixed(ms < 100 ? 1 : 0)} ms`;
  }
  return `${(ns / 1e9).toFixed(1)} s`;
}

/** A tensor value: 4 significant digits, exponent notation when very large or small. */
export function formatValue(x: number | null | undefined): string {
  if (x === null || x === undefined) return "–";
  if (!Number.isFinite(x)) return String(x);
  if (x === 0) return "0";
  const a = Math.abs(x);
  if (Number.isInteger(x) && a < 1e6) return String(x);
  if (a >= 1e5 || a < 1e-3) return x.toExponential(2);
  return String(Number(x.toPrecision(4)));
}

/** A fraction as a percentage: "12.5%", "<0.1%". */
export function formatShare(f: number): string {
  if (f <= 0) return "0%";
  if (f < 0.001) return "<0.1%";
  return `${(f * 100).toFixed(f < 0.1 ? 1 : 0)}%`;
}
