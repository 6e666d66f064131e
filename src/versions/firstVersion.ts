/**
 * Version 1 of a versioned projection, made by `migrate` when the projection has no version yet
 * (docs/design.md "Blue/green versions"): its schema and migrations, the views of the stable
 * schema, the registry row (`live`) and an audit row, the last three in one transaction.
 */
import type pg from "pg";
import { withTransaction } from "../db/withTransaction.js";
import { insertVersion, insertVersionAudit, selectVersions } from "../sql/projectionVersions.js";
import { pointViews } from "../sql/versionViews.js";
import { createVersionSchema } from "./createVersion.js";
import { operator } from "./operator.js";
import { versionGroup, versionSchema } from "./versionNames.js";

/**
 * Creates version 1 of `projection` (live, group `<groupId>-v1`) when it has no version; does
 * nothing otherwise: an existing version's schema is never changed here (a changed projection gets
 * a new version, `rebuild --blue-green`). Call it holding the migration lock.
 * @returns true when version 1 was created now.
 * @throws ReplayableError DATABASE when a migration fails.
 */
export async function ensureFirstVersion(
  client: pg.PoolClient,
  projection: { readonly name: string; readonly migrationsFolder?: string | undefined },
  groupId: string = projection.name,
): Promise<boolean> {
  if ((await selectVersions(client, projection.name)).length > 0) return false;
  await createVersionSchema(client, projection.name, 1, projection.migrationsFolder);
  const schemaName = versionSchema(projection.name, 1);
  await withTransaction(client, async () => {
    await insertVersion(client, {
      projection: projection.name,
      version: 1,
      schemaName,
      groupId: versionGroup(groupId, 1),
      state: "live",
    });
    const views = await pointViews(client, projection.name, schemaName, []);
    await insertVersionAudit(client, {
      projection: projection.name,
      action: "create",
      version: 1,
      ...operator(),
      forced: false,
      offsets: { views },
    });
  });
  return true;
}
