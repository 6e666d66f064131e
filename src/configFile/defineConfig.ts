/** `defineConfig`: the typed shape of `replayable.config.ts`. */
import type { ProjectionDefinition } from "../defineProjection.js";
import type { ProjectionDeclaration } from "./projectionFromDeclaration.js";
import type { ConfigFileSettings } from "./settings.js";

/** One entry of `projections`: a typed projection ({@link ProjectionDefinition}) or a zero-code declaration. */
export type ProjectionEntry = ProjectionDefinition<unknown> | ProjectionDeclaration;

/**
 * What `replayable.config.ts` exports (as its default export): the projections the CLI can run by
 * name, and settings named after their environment variables (see {@link ConfigFileSettings}).
 * Precedence: the file, then environment variables, then command-line flags.
 */
export interface ReplayableConfig extends ConfigFileSettings {
  /** The projections `run`, `migrate` and every other command know by name. */
  readonly projections?: readonly ProjectionEntry[];
}

/**
 * Declares the config file's contents with their types. Returns `config` unchanged: the CLI checks
 * it at start-up and reports every problem at once (exit 2).
 * @example
 * export default defineConfig({
 *   kafkaBrokers: ["127.0.0.1:9092"],
 *   databaseUrl: "postgres://postgres@127.0.0.1:5432/app",
 *   projections: [orders],
 * });
 */
export function defineConfig(config: ReplayableConfig): ReplayableConfig {
  return config;
}
