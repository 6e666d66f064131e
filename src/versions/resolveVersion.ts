/**
 * Which version of a versioned projection a command acts on: the live one, or the one `--version`
 * names (docs/design.md "Blue/green versions").
 */
import type pg from "pg";
import { ReplayableError } from "../errors.js";
import type { Projection } from "../projection.js";
import { selectVersions, type VersionRow } from "../sql/projectionVersions.js";
import { versionedInstance, type VersionNumber, type VersionedInstance } from "./versionNames.js";

/** A version and the projection the engine runs for it. */
export interface ResolvedVersion {
  readonly row: VersionRow;
  readonly instance: VersionedInstance;
}

/**
 * The version `version` of `projection` (default: its live one), with its engine instance.
 * @throws ReplayableError CONFIG_INVALID when the projection has no version (run `migrate`), the
 *   version does not exist or was dropped, naming the versions there are.
 */
export async function resolveVersion(
  db: pg.Pool | pg.ClientBase,
  projection: Projection<unknown>,
  version?: VersionNumber,
): Promise<ResolvedVersion> {
  const rows = await selectVersions(db, projection.name);
  const known = rows.map((r) => `${r.version} (${r.state})`).join(", ");
  if (rows.length === 0)
    throw new ReplayableError(
      "CONFIG_INVALID",
      `projection ${projection.name} is versioned but has no version yet: run \`replayable migrate --projection ${projection.name}\` (it creates version 1)`,
    );
  const row =
    version === undefined ? rows.find((r) => r.state === "live") : rows.find((r) => r.version === version);
  if (row === undefined || row.state === "dropped")
    throw new ReplayableError(
      "CONFIG_INVALID",
      `--version: projection ${projection.name} has no ${version === undefined ? "live version" : `version ${version}`}${row?.state === "dropped" ? " (it was dropped)" : ""}; its versions: ${known}`,
    );
  return { row, instance: versionedInstance(projection, row.version) };
}
