/** One figure per line, in the stable form the issues name. */
export function report(name: string, value: number, unit: string): void {
  // A count is a whole number: `fuzz_5xx 0`, not `0.000`.
  const rounded = unit === 'count' && Number.isInteger(value) ? String(value) : Math.abs(value) >= 100 ? value.toFixed(0) : value.toFixed(3);
  process.stdout.write(`bench ${name} ${rounded} ${unit}\n`);
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx] as number;
}
