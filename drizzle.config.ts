import { defineConfig } from "drizzle-kit";

/** drizzle-kit: generates SQL migrations into drizzle/ from the schema files (`npm run db:generate`). */
export default defineConfig({
  dialect: "postgresql",
  schema: ["./src/db/schema.ts", "./src/projections/ledger/schema.ts", "./src/projections/github/schema.ts"],
  out: "./drizzle",
  migrations: { schema: "replayable", table: "__drizzle_migrations" },
});
