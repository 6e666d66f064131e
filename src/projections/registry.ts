/**
 * The projections the CLI knows by name (`--projection`, REPLAYABLE_PROJECTION): those of the
 * config file, then the examples this package ships (`ledger`, `github`) under names the config
 * file does not use. Every command resolves names here.
 */
import type pg from "pg";
import { join } from "node:path";
import { ReplayableError } from "../errors.js";
import { packageRoot } from "../support/packageRoot.js";
import type { Projection } from "../projection.js";
import { githubProjection } from "./github/githubProjection.js";
import { ledgerProjection } from "./ledger/ledgerProjection.js";

/** A projection the CLI can run, with where its migrations are. */
export interface RegisteredProjection extends Projection<unknown> {
  /** Absolute path of its drizzle-kit migrations folder; undefined: it has none. */
  readonly migrationsFolder?: string | undefined;
  /** `config`: from the config file; `example`: shipped with the package. */
  readonly origin: "config" | "example";
  /**
   * A start-up check against the database beyond its tables existing (e.g. a zero-code sink's
   * column mapping): one line per problem, each naming the field and the fix; empty when fine.
   */
  readonly validate?: (pool: pg.Pool) => Promise<string[]>;
  /** Blue/green versions (defineProjection's `versioned`); absent or false: tables as named. */
  readonly versioned?: boolean;
  /**
   * What to do about a table of its own that does not exist, when the projection has no migrations
   * folder; undefined: add one (defineProjection's `migrations`).
   */
  readonly missingTableFix?: string;
}

/**
 * The shipped examples: `ledger` with its migrations in `drizzle/ledger/`; `github`, versioned
 * (blue/green), with its migrations in `drizzle/github-versioned/` (drizzle/github/ is the
 * non-versioned layout released before, kept unedited).
 */
export function exampleProjections(): RegisteredProjection[] {
  const folder = (name: string) => join(packageRoot(), "drizzle", name);
  return [
    { ...(ledgerProjection as Projection<unknown>), migrationsFolder: folder("ledger"), origin: "example" },
    {
      ...(githubProjection as Projection<unknown>),
      migrationsFolder: folder("github-versioned"),
      origin: "example",
      versioned: true,
    },
  ];
}

/** Projections by name: the config file's first, then the examples it does not shadow. */
export class ProjectionRegistry {
  readonly #byName = new Map<string, RegisteredProjection>();
  readonly #configured: readonly RegisteredProjection[];

  /** @param configured the config file's projections, names already checked to be unique. */
  constructor(configured: readonly RegisteredProjection[] = []) {
    this.#configured = configured;
    for (const p of configured) this.#byName.set(p.name, p);
    for (const p of exampleProjections()) if (!this.#byName.has(p.name)) this.#byName.set(p.name, p);
  }

  /** Every name, the config file's first. */
  names(): string[] {
    return [...this.#byName.keys()];
  }

  /** The config file's projections, in its order. */
  configured(): readonly RegisteredProjection[] {
    return this.#configured;
  }

  /** True when `name` is a projection here. */
  has(name: string): boolean {
    return this.#byName.has(name);
  }

  /**
   * The projection called `name`; `source` says where the name came from, as config problems
   * say it (` (from a command-line flag)`; empty for the environment).
   * @throws ReplayableError CONFIG_INVALID naming the setting, its source and the valid projections.
   */
  get(name: string, source = ""): RegisteredProjection {
    const projection = this.#byName.get(name);
    if (projection === undefined) {
      throw new ReplayableError(
        "CONFIG_INVALID",
        `invalid configuration:\n  REPLAYABLE_PROJECTION=${name}${source}: unknown projection; use one of ${this.names().join(", ")} (--projection, REPLAYABLE_PROJECTION or the config file's projections)`,
      );
    }
    return projection;
  }
}
