import { defineConfig } from "drizzle-kit";

/**
 * drizzle-kit: generates the engine's SQL migrations into drizzle/engine/ from its schema file
 * (`npm run db:generate`). The example projections' migrations are in drizzle/ledger/ and
 * drizzle/github-versioned/ (drizzle.github.config.ts); drizzle/ itself holds the chain released up to 0.1.x, never edited (see
 * src/db/migrate.ts).
 */
export default defineConfig({
  dialect: "postgresql",
  schema: ["./src/db/schema.ts"],
  out: "./drizzle/engine",
  migrations: { schema: "replayable", table: "__drizzle_migrations" },
});
