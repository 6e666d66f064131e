/** The projections this package ships, by name (`--projection`). */
import { ReplayableError } from "../errors.js";
import type { Projection } from "../projection.js";
import { githubProjection } from "./github/githubProjection.js";
import { ledgerProjection } from "./ledger/ledgerProjection.js";

const projections: ReadonlyMap<string, Projection<never>> = new Map<string, Projection<never>>([
  [ledgerProjection.name, ledgerProjection as Projection<never>],
  [githubProjection.name, githubProjection as Projection<never>],
]);

/** Names of the shipped projections. */
export function projectionNames(): string[] {
  return [...projections.keys()];
}

/**
 * The shipped projection called `name` (REPLAYABLE_PROJECTION or `--projection`).
 * @throws ReplayableError CONFIG_INVALID naming the variable and the valid projections.
 */
export function getProjection(name: string): Projection<unknown> {
  const projection = projections.get(name);
  if (projection === undefined) {
    throw new ReplayableError(
      "CONFIG_INVALID",
      `invalid configuration:\n  REPLAYABLE_PROJECTION=${name}: unknown projection; use one of ${projectionNames().join(", ")} (or --projection)`,
    );
  }
  return projection;
}
