/**
 * Version 1 of a versioned projection, made by `migrate` when the projection has no version yet
 * (docs/design.md "Blue/green versions"): its schema and migrations, the views of the stable
 * schema, the registry row (`live`) and an audit row, the last three in one transaction.
 */
import pg from "pg";
import { withTransaction } from "../db/withTransaction.js";
import { ReplayableError } from "../errors.js";
import { insertVersion, insertVersionAudit, selectVersions } from "../sql/projectionVersions.js";
import { pointViews, schemaTables } from "../sql/versionViews.js";
import { createVersionSchema } from "./createVersion.js";
import { operator } from "./operator.js";
import { baseTable, versionGroup, versionSchema } from "./versionNames.js";

/** What {@link ensureFirstVersion} needs of a projection. */
export interface FirstVersionProjection {
  readonly name: string;
  readonly migrationsFolder?: string | undefined;
  /** Its stable table names, `<name>.<table>`; undefined: every table of schema `<name>` counts. */
  readonly tables?: readonly string[] | undefined;
}

/**
 * Creates version 1 of `projection` (live, group `<groupId>-v1`) when it has no version; does
 * nothing otherwise: an existing version's schema is never changed here (a changed projection gets
 * a new version, `rebuild --blue-green`). Call it holding the migration lock.
 * @param groupId the version's group is `<groupId>-v1`; default the projection's name.
 * @returns true when version 1 was created now.
 * @throws ReplayableError DATABASE when a migration fails, or, changing nothing, when the stable
 *   schema holds ordinary tables of the names its views need ({@link tablesInTheWay}).
 */
export async function ensureFirstVersion(
  client: pg.PoolClient,
  projection: FirstVersionProjection,
  groupId: string = projection.name,
): Promise<boolean> {
  if ((await selectVersions(client, projection.name)).length > 0) return false;
  await refuseTablesInTheWay(client, projection);
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

/**
 * Refuses, changing nothing, a projection without a version whose stable schema is in the way of
 * version 1 ({@link refuseTablesInTheWay}); `migrate` checks every versioned projection so before
 * it changes any.
 * @throws ReplayableError DATABASE as {@link ensureFirstVersion}.
 */
export async function refuseFirstVersionBlocked(
  client: pg.ClientBase,
  projection: FirstVersionProjection,
): Promise<void> {
  if ((await selectVersions(client, projection.name)).length > 0) return;
  await refuseTablesInTheWay(client, projection);
}

/**
 * Refuses, before anything is created, a stable schema that holds ordinary tables where version 1's
 * views must go: a database set up before the projection was versioned (the shipped github
 * projection's tables of drizzle/github/, or a projection declared without `versioned: true`).
 * `migrate --convert-to-versioned` converts them in place (src/versions/convertToVersioned.ts).
 * @throws ReplayableError DATABASE naming the tables and the fixes (convert, rename the schema, or drop them).
 */
async function refuseTablesInTheWay(
  client: pg.ClientBase,
  projection: FirstVersionProjection,
): Promise<void> {
  const name = projection.name;
  const declared = projection.tables?.map(baseTable);
  const inTheWay = (await schemaTables(client, name)).filter((t) => declared?.includes(t) ?? true);
  if (inTheWay.length === 0) return;
  const q = (id: string) => pg.escapeIdentifier(id);
  throw new ReplayableError(
    "DATABASE",
    `projection ${name} is versioned (blue/green), but schema ${name} holds the tables ${inTheWay.map((t) => `${name}.${t}`).join(", ")}, ` +
      `where version 1 must create views of the same names: the database was set up before ${name} was versioned ` +
      `(a release whose ${name} projection was not, or a projection declared without versioned: true). ` +
      `Nothing was changed. To keep them, with the projection's dedupe state and consumer group, as version 1: stop its members and run ` +
      `\`replayable migrate --convert-to-versioned\` (docs/replay.md "Converting a plain projection"; add --group <id> if its group is not ${name}). ` +
      `To start version 1 from the log instead, keep them under another name (ALTER SCHEMA ${q(name)} RENAME TO ${q(`${name}_unversioned`)}) or drop them ` +
      `(DROP TABLE ${inTheWay.map((t) => `${q(name)}.${q(t)}`).join(", ")}), then run \`replayable migrate\` again: ` +
      `it creates version 1 (schema ${versionSchema(name, 1)}, views in schema ${name}), and \`replayable run --projection ${name}\` applies the whole log into it.`,
    { context: { projection: name, tables: inTheWay } },
  );
}
