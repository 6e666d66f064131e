/**
 * The names a blue/green version of a projection goes by (docs/design.md "Blue/green versions"):
 * its schema `<name>_v<N>`, its dedupe key `<name>@v<N>` (checkpoints, event ids, dead letters,
 * rebuild epoch, advisory lock), its consumer group `<group>-v<N>` and its migrations table. Pure.
 */
import type { Projection } from "../projection.js";

/** A version number: a positive integer. */
export type VersionNumber = number;

/**
 * Parses a `--version` flag value: a whole number from 1.
 * @throws RangeError naming the flag when `text` is not one.
 */
export function parseVersion(text: string, flag = "--version"): VersionNumber {
  if (!/^[1-9][0-9]{0,8}$/.test(text))
    throw new RangeError(`${flag}: must be a version number (1, 2, ...), got ${JSON.stringify(text)}`);
  return Number(text);
}

/** The schema of version `version` of projection `name`, e.g. `github_v2`. */
export function versionSchema(name: string, version: VersionNumber): string {
  return `${name}_v${version}`;
}

/**
 * The dedupe key of a version, e.g. `github@v2`: the projection name its checkpoints, event ids,
 * dead letters, rebuild epoch and advisory lock are stored under. `@` is never in a projection
 * name (`[a-z][a-z0-9_]*`), so no plain projection can share it.
 */
export function versionKey(name: string, version: VersionNumber): string {
  return `${name}@v${version}`;
}

/** The consumer group of a version: `<group>-v<N>`, `group` as given when the version was created. */
export function versionGroup(group: string, version: VersionNumber): string {
  return `${group}-v${version}`;
}

/**
 * The name of a schema-qualified table without its schema: `github.github_repo_activity` →
 * `github_repo_activity`.
 */
export function baseTable(table: string): string {
  const dot = table.lastIndexOf(".");
  return dot < 0 ? table : table.slice(dot + 1);
}

/**
 * The problems of declaring `projection` versioned (one line each; empty when fine): every table
 * must be in the schema named like the projection (`<name>.<table>`), the stable names readers use.
 */
export function versionedTableProblems(name: string, tables: readonly string[]): string[] {
  return tables
    .filter((t) => !t.startsWith(`${name}.`) || t.split(".").length !== 2)
    .map(
      (t) =>
        `tables: ${t}: a versioned projection's tables are named ${name}.<table> (the stable names readers use; each version keeps them in schema ${name}_v<N>)`,
    );
}

/** A projection as the engine runs one version of it. */
export interface VersionedInstance extends Projection<unknown> {
  /** The projection's own name (the instance's `name` is the version's dedupe key). */
  readonly baseName: string;
  readonly version: VersionNumber;
}

/**
 * The projection the engine runs for version `version`: named by its dedupe key, its tables in the
 * version's schema, and every transaction run with `search_path` set to that schema.
 */
export function versionedInstance(
  projection: Projection<unknown>,
  version: VersionNumber,
): VersionedInstance {
  const schema = versionSchema(projection.name, version);
  const instance: VersionedInstance = {
    ...projection,
    name: versionKey(projection.name, version),
    tables: projection.tables.map((t) => `${schema}.${baseTable(t)}`),
    searchPath: schema,
    baseName: projection.name,
    version,
  };
  // Methods of a class instance are not copied by a spread: bind them from the original.
  return {
    ...instance,
    decode: projection.decode.bind(projection),
    apply: projection.apply.bind(projection),
    ...(projection.applyBatch === undefined ? {} : { applyBatch: projection.applyBatch.bind(projection) }),
  };
}
