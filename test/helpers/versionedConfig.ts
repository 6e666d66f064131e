/**
 * A versioned projection (docs/design.md "Blue/green versions") in a config file of its own, for
 * the blue/green tests: `shop_totals`-like sums of sales from a JSON topic, written with unqualified
 * table names. `BG_VARIANT=changed` in the CLI's environment makes it a changed projection: its
 * migrations add a column `note` and it counts cents twice, so its tables differ from the original's.
 * `BG_DEDUPE=event-id` makes it dedupe by the value's `id` field (event ids) instead of offsets.
 * test/helpers/versionedStack.ts builds a test's stack around it.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { onTestFinished } from "vitest";
import { BROKERS } from "./stack.js";

/** A folder of its own outside the repository, removed when the test finishes. */
export function tempFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), "replayable-bg-"));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function writeMigrations(folder: string, statements: readonly string[]): void {
  mkdirSync(join(folder, "meta"), { recursive: true });
  const entries = statements.map((sql, idx) => {
    const tag = `000${idx}_step`;
    writeFileSync(join(folder, `${tag}.sql`), sql);
    return { idx, version: "7", when: 1767225600000 + idx * 1000, tag, breakpoints: true };
  });
  writeFileSync(
    join(folder, "meta", "_journal.json"),
    JSON.stringify({ version: "7", dialect: "postgresql", entries }),
  );
}

const TOTALS = `CREATE TABLE "totals" ("shop" text PRIMARY KEY NOT NULL, "sales" bigint NOT NULL, "cents" bigint NOT NULL);`;

/** Writes `replayable.config.ts` with the versioned projection `name` of `topic` into `dir`. */
export function writeVersionedConfig(dir: string, name: string, topic: string): void {
  writeMigrations(join(dir, "migrations"), [TOTALS]);
  writeMigrations(join(dir, "migrations-changed"), [
    TOTALS,
    `ALTER TABLE "totals" ADD COLUMN "note" text DEFAULT 'changed' NOT NULL;`,
  ]);
  writeFileSync(
    join(dir, "replayable.config.ts"),
    `import { defineConfig, defineProjection, PermanentRecordError } from "replayable";

interface Sale { id: string; shop: string; cents: number }
const changed = process.env.BG_VARIANT === "changed";
const eventIds = process.env.BG_DEDUPE === "event-id";

const sales = defineProjection<Sale>({
  name: ${JSON.stringify(name)},
  versioned: true,
  dedupe: eventIds ? { kind: "event-id" as const, field: "id" } : { kind: "offset" as const },
  topics: [${JSON.stringify(topic)}],
  tables: [${JSON.stringify(`${name}.totals`)}],
  migrations: changed ? "./migrations-changed" : "./migrations",
  decode(record) {
    try {
      return JSON.parse(record.value?.toString("utf8") ?? "") as Sale;
    } catch {
      throw new PermanentRecordError("DECODE_FAILED", "not JSON");
    }
  },
  async apply({ client }, { value }) {
    const cents = changed ? value.cents * 2 : value.cents;
    await client.query(
      "INSERT INTO totals (shop, sales, cents) VALUES ($1, 1, $2) ON CONFLICT (shop) DO UPDATE SET sales = totals.sales + 1, cents = totals.cents + excluded.cents",
      [value.shop, cents],
    );
  },
});

export default defineConfig({
  kafkaBrokers: ${JSON.stringify(BROKERS)},
  databaseUrl: "postgres://nobody@127.0.0.1:1/not_used",
  lagRefreshMs: 500,
  projections: [sales],
});
`,
  );
}

/** `count` sales of 5 shops, as records for produceRecords; cents 100 + i. */
export function sales(count: number, from = 0): { key: string; value: string }[] {
  return Array.from({ length: count }, (_, j) => {
    const i = from + j;
    return {
      key: `shop-${i % 5}`,
      value: JSON.stringify({ id: `sale-${i}`, shop: `shop-${i % 5}`, cents: 100 + i }),
    };
  });
}
