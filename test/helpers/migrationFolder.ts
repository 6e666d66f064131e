/** Writing a projection's migrations folder, as drizzle-kit lays it out, for config-file tests. */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Writes `<folder>/0000_<name>.sql` holding `sql` and the drizzle-kit journal
 * (`<folder>/meta/_journal.json`) that lists it as the folder's only migration.
 * @param folder the migrations folder, created if missing.
 */
export function writeOneMigration(folder: string, name: string, sql: string): void {
  const tag = `0000_${name}`;
  mkdirSync(join(folder, "meta"), { recursive: true });
  writeFileSync(join(folder, `${tag}.sql`), sql);
  writeFileSync(
    join(folder, "meta", "_journal.json"),
    JSON.stringify({
      version: "7",
      dialect: "postgresql",
      entries: [{ idx: 0, version: "7", when: 1767225600000, tag, breakpoints: true }],
    }),
  );
}
