/**
 * Which state a command that names a consumer group acts on (`replay`): for a versioned projection,
 * the version whose group it is (docs/design.md "Blue/green versions": version N of `P` keeps its
 * dedupe state under `P@vN` and consumes as `<group>-vN`).
 */
import type pg from "pg";
import { ReplayableError } from "../errors.js";
import { selectVersions } from "../sql/projectionVersions.js";
import { versionKey } from "./versionNames.js";

/**
 * The dedupe key of `projection`'s state that group `groupId` applies: the projection's name for a
 * plain projection; `<name>@v<N>` for the version of a versioned one whose group is `groupId`.
 * @throws ReplayableError CONFIG_INVALID (exit 2) when no version (not dropped) has that group,
 *   naming each version's group.
 */
export async function dedupeKeyOfGroup(
  db: pg.Pool | pg.ClientBase,
  projection: { readonly name: string; readonly versioned?: boolean | undefined },
  groupId: string,
): Promise<string> {
  if (projection.versioned !== true) return projection.name;
  const rows = (await selectVersions(db, projection.name)).filter((r) => r.state !== "dropped");
  const row = rows.find((r) => r.groupId === groupId);
  if (row !== undefined) return versionKey(projection.name, row.version);
  const known = rows.map((r) => `${r.version} (${r.state}): --group ${r.groupId}`).join(", ");
  throw new ReplayableError(
    "CONFIG_INVALID",
    `--group: ${groupId} is not the consumer group of a version of projection ${projection.name}, which is versioned (each version consumes as a group of its own); give the group of the version to act on: ${known === "" ? "it has no version yet (run `replayable migrate`)" : known}`,
  );
}
