import { defineConfig } from "drizzle-kit";

/**
 * drizzle-kit: generates the migrations of the blue/green version tables into drizzle/versions/
 * from src/db/versionsSchema.ts (`npm run db:generate:versions`); applied after the engine's by
 * src/db/migrate.ts, tracked in a table of their own.
 */
export default defineConfig({
  dialect: "postgresql",
  schema: ["./src/db/versionsSchema.ts"],
  out: "./drizzle/versions",
  migrations: { schema: "replayable", table: "__drizzle_migrations@versions" },
});
