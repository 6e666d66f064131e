/**
 * The `--version N` option of the commands that act on a projection's dedupe state (`replay`,
 * `prune`, `dead-letters`): which version's key (`<name>@v<N>`) and consumer group (`<group>-v<N>`)
 * they act on. A versioned projection defaults to its live version (docs/replay.md "Blue/green
 * rebuild"); a plain projection acts on its own name and group, and refuses `--version`.
 */
import { Option } from "commander";
import type pg from "pg";
import { ReplayableError, errorMessage } from "../errors.js";
import type { Projection } from "../projection.js";
import type { RegisteredProjection } from "../projections/registry.js";
import type { VersionState } from "../sql/projectionVersions.js";
import { resolveVersion } from "../versions/resolveVersion.js";
import { parseVersion } from "../versions/versionNames.js";

/** What a command acts on. */
export interface VersionTarget {
  /** The projection the engine runs: a version's instance (named `<name>@v<N>`), else the plain one. */
  readonly projection: Projection<unknown>;
  /** The consumer group: the version's own for a versioned projection. */
  readonly groupId: string;
  /** The version, for a versioned projection, and the projection's own name. */
  readonly version?: { readonly number: number; readonly state: VersionState; readonly of: string };
}

/** The `--version <n>` option, described for `command`'s help. */
export function versionTargetOption(): Option {
  return new Option(
    "--version <n>",
    'the version of a versioned projection to act on (default: its live one; docs/replay.md "Blue/green rebuild")',
  );
}

/**
 * Parses `--version` (as `run --version` does) and resolves the version `projection` acts on.
 * @param group the `--group` (or REPLAYABLE_GROUP_ID) the operator gave, if any: for a versioned
 *   projection it must be the version's group or the group it was created from.
 * @param defaultGroup the group of a plain projection when `group` is not given.
 * @throws ReplayableError CONFIG_INVALID naming `--version` when it is not a version number, is given
 *   for a plain projection, or names a version that does not exist or was dropped; naming
 *   `--group` when it is another group.
 */
export async function resolveVersionTarget(
  db: pg.Pool,
  projection: RegisteredProjection,
  versionFlag: string | undefined,
  group: string | undefined,
  defaultGroup: string,
): Promise<VersionTarget> {
  if (projection.versioned !== true) {
    if (versionFlag !== undefined)
      throw new ReplayableError(
        "CONFIG_INVALID",
        `--version: projection ${projection.name} is not versioned (defineProjection({ versioned: true }) opts in to blue/green versions); leave out --version`,
      );
    return { projection, groupId: group ?? defaultGroup };
  }
  let version: number | undefined;
  try {
    version = versionFlag === undefined ? undefined : parseVersion(versionFlag);
  } catch (error) {
    throw new ReplayableError("CONFIG_INVALID", errorMessage(error));
  }
  const { row, instance } = await resolveVersion(db, projection, version);
  checkGroupOfVersion(projection.name, row, group);
  return {
    projection: instance,
    groupId: row.groupId,
    version: { number: row.version, state: row.state, of: projection.name },
  };
}

/**
 * One line saying which version a command acted on, e.g. `Version 2 (shadow) of projection sales:
 * dedupe key sales@v2, consumer group sales-v2`; undefined for a plain projection.
 */
export function versionLine(target: VersionTarget): string | undefined {
  const v = target.version;
  if (v === undefined) return undefined;
  return `Version ${v.number} (${v.state}) of projection ${v.of}: dedupe key ${target.projection.name}, consumer group ${target.groupId}`;
}

/**
 * Checks the group an operator named for a version of a versioned projection: it must be the
 * version's own group (`<group>-v<N>`) or the group the version was created from (`<group>`).
 * Nothing to check when no group was named.
 * @throws ReplayableError CONFIG_INVALID naming `--group` when it is another group (it would
 *   otherwise be ignored: a version always consumes as its own group).
 */
export function checkGroupOfVersion(
  projection: string,
  row: { readonly version: number; readonly groupId: string },
  group: string | undefined,
): void {
  if (group === undefined || group === row.groupId || `${group}-v${row.version}` === row.groupId) return;
  throw new ReplayableError(
    "CONFIG_INVALID",
    `--group: version ${row.version} of projection ${projection} consumes as group ${row.groupId}, not ${group}; leave out --group (the version's group is used) or give --version for the version you mean`,
  );
}
