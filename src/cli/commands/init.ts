/**
 * `replayable init`: writes a commented `replayable.config.ts` with one typed projection and its
 * first migration into the working directory, so a newcomer starts from a working file.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { Command } from "commander";
import { ReplayableError } from "../../errors.js";
import { action } from "../common.js";

/** The files `init` writes, relative to the working directory, and their contents. */
export function initFiles(): Record<string, string> {
  return {
    "replayable.config.ts": CONFIG,
    "migrations/orders/0000_orders.sql": MIGRATION,
    "migrations/orders/meta/_journal.json": `${JSON.stringify(JOURNAL, null, 2)}\n`,
  };
}

/** Builds the `init` command. */
export function initCommand(): Command {
  return new Command("init")
    .description(
      "write a commented replayable.config.ts with one typed projection and its first migration into the working directory",
    )
    .action(action(initAction));
}

/** Writes the starter files into the working directory, refusing if any exists already. */
function initAction(): Promise<void> {
  const cwd = process.cwd();
  const files = initFiles();
  const existing = Object.keys(files).filter((f) => existsSync(join(cwd, f)));
  if (existing.length > 0)
    throw new ReplayableError(
      "CONFIG_INVALID",
      `init: ${existing.join(", ")} already exist${existing.length === 1 ? "s" : ""} in ${cwd}; nothing was written. Move ${existing.length === 1 ? "it" : "them"} away or run init in another folder.`,
    );
  for (const [file, text] of Object.entries(files)) {
    const path = join(cwd, file);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text, { flag: "wx" });
    process.stdout.write(`wrote ${relative(cwd, path)}\n`);
  }
  process.stdout.write(
    "next: edit kafkaBrokers, databaseUrl and the projection's topics and tables in replayable.config.ts, then `npx replayable migrate`, then `npx replayable run` (see the comments in replayable.config.ts)\n",
  );
  return Promise.resolve();
}

const JOURNAL = {
  version: "7",
  dialect: "postgresql",
  entries: [{ idx: 0, version: "7", when: 1767225600000, tag: "0000_orders", breakpoints: true }],
};

const MIGRATION = `-- The orders projection's tables. Migrations are applied in the order of meta/_journal.json by
-- \`replayable migrate\` (drizzle's migrator), tracked in replayable.__drizzle_migrations_<projection name>
-- (replayable.__drizzle_migrations_orders while the projection is named orders).
-- Never edit a migration once applied: add the next one (\`npx drizzle-kit generate --custom\`
-- writes an empty one with its journal entry).
CREATE SCHEMA IF NOT EXISTS "orders";
--> statement-breakpoint
CREATE TABLE "orders"."customer_totals" (
	"customer" text PRIMARY KEY NOT NULL,
	"orders" bigint NOT NULL,
	"amount_cents" bigint NOT NULL
);
`;

const CONFIG = `/**
 * replayable's config file: the projections the CLI runs by name, and settings.
 *
 *   npx replayable migrate        # replayable's schema, then each projection's migrations
 *   npx replayable run            # one member of the consumer group (start several to share partitions)
 *   npx replayable status         # lag and checkpoint per partition
 *
 * Settings are named after the environment variables (README "Configuration"): KAFKA_BROKERS is
 * kafkaBrokers, REPLAYABLE_DB_POOL_SIZE is dbPoolSize. Environment variables override this file,
 * and flags override both. Writing projections: docs/projections.md.
 */
import { defineConfig, defineProjection, PermanentRecordError } from "replayable";

/** One record of the topic \`orders\`: JSON such as {"id":"o-1","customer":"c-7","amountCents":1250}. */
interface OrderPlaced {
  id: string;
  customer: string;
  amountCents: number;
}

const orders = defineProjection<OrderPlaced>({
  // Keys the checkpoints, event ids and dead letters; also the default consumer group id.
  name: "orders",
  // A producer that re-sends an order makes a new record with the same "id": applied once.
  // { kind: "offset" } dedupes redeliveries of the same record only.
  dedupe: { kind: "event-id", field: "id" },
  topics: ["orders"],
  // Every table the projection writes: \`rebuild\` empties them, \`checksum\` fingerprints them.
  tables: ["orders.customer_totals"],
  // drizzle-kit's layout, relative to this file; \`replayable migrate\` applies it.
  migrations: "./migrations/orders",

  // Pure. Throw a PermanentRecordError for a record that can never be applied: it is dead-lettered
  // (\`replayable dead-letters list\`) and the partition goes on.
  decode(record) {
    let value: unknown;
    try {
      value = JSON.parse(record.value?.toString("utf8") ?? "");
    } catch {
      throw new PermanentRecordError("DECODE_FAILED", "the value is not JSON");
    }
    const order = value as Partial<OrderPlaced>;
    if (
      typeof order.id !== "string" ||
      typeof order.customer !== "string" ||
      !Number.isSafeInteger(order.amountCents)
    )
      throw new PermanentRecordError("DECODE_FAILED", "expected {id, customer, amountCents}");
    return order as OrderPlaced;
  },

  // Runs inside the transaction that records the dedupe key and moves the checkpoint: write only
  // through ctx.client (or ctx.db, drizzle over the same client), never COMMIT yourself.
  async apply({ client }, { value }) {
    await client.query(
      \`INSERT INTO orders.customer_totals (customer, orders, amount_cents) VALUES ($1, 1, $2)
       ON CONFLICT (customer) DO UPDATE SET orders = customer_totals.orders + 1,
         amount_cents = customer_totals.amount_cents + excluded.amount_cents\`,
      [value.customer, value.amountCents],
    );
  },
});

export default defineConfig({
  kafkaBrokers: ["127.0.0.1:9092"],
  databaseUrl: "postgres://postgres@127.0.0.1:5432/test",
  projections: [orders],
});
`;
