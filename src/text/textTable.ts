/** Aligned plain-text tables: the CLI's table output, the demo's and the benchmark's reports. */

/** Options of {@link formatTable}. */
export interface TableOptions {
  /** Put before every line; default none. */
  readonly indent?: string;
  /** A line of dashes under the header; default false. */
  readonly rule?: boolean;
  /** Right-align cells that are numbers; default false (every cell left-aligned). */
  readonly numbersRight?: boolean;
}

/**
 * The lines of a table whose first row is the header: columns two spaces apart, each as wide as
 * its widest cell, trailing spaces trimmed.
 */
export function formatTable(
  rows: readonly (readonly (string | number)[])[],
  options: TableOptions = {},
): string[] {
  const header = rows[0];
  if (header === undefined) return [];
  const widths = header.map((_, i) => Math.max(...rows.map((r) => String(r[i] ?? "").length)));
  const line = (cells: readonly (string | number)[]) =>
    `${options.indent ?? ""}${cells
      .map((cell, i) =>
        typeof cell === "number" && options.numbersRight === true
          ? String(cell).padStart(widths[i]!)
          : String(cell).padEnd(widths[i]!),
      )
      .join("  ")}`.trimEnd();
  const lines = rows.map(line);
  if (options.rule === true) lines.splice(1, 0, line(widths.map((w) => "-".repeat(w))));
  return lines;
}

/** The rows of {@link formatTable} for records: the first record's keys are the header; none for no records. */
export function recordRows(records: readonly Record<string, string | number>[]): (string | number)[][] {
  if (records[0] === undefined) return [];
  const columns = Object.keys(records[0]);
  return [columns, ...records.map((r) => columns.map((c) => r[c] ?? ""))];
}
