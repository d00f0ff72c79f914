// One way to write a count (a model's parameters) for people, the same in the viewer, the
// extension's lists and the Python side (`summary.format_count`): below 1000 the number itself;
// else in K, M, B or T with one decimal, rounded half up, without a trailing ".0":
// "999", "1K", "1.5K", "786.4K", "124.4M", "70.6B". Integer arithmetic, so that no float
// rounding (1250 / 1000 is exactly 1.25) can make two implementations disagree.

const UNITS = ["K", "M", "B", "T"] as const;

export function formatCount(count: number): string {
  if (!Number.isFinite(count) || count < 0) return "?";
  const n = Math.round(count);
  if (n < 1000) return String(n);
  let unit = 0;
  let size = 1000;
  while (unit < UNITS.length - 1 && n >= size * 1000) {
    unit++;
    size *= 1000;
  }
  let tenths = Math.floor((n * 10 + size / 2) / size);
  // 999,950 rounds to 1000.0K: that is 1M.
  if (tenths >= 10_000 && unit < UNITS.length - 1) {
    unit++;
    size *= 1000;
    tenths = Math.floor((n * 10 + size / 2) / size);
  }
  const whole = Math.floor(tenths / 10);
  const decimal = tenths % 10;
  return `${whole}${decimal ? `.${decimal}` : ""}${UNITS[unit]}`;
}
