/** What the blue/green commands (`promote`, `rollback`, `drop-version`) share: the projection, flags, the swap report. */
import { ReplayableError, errorMessage } from "../errors.js";
import type { RegisteredProjection } from "../projections/registry.js";
import type { SwapOutcome } from "../versions/promote.js";
import { parseVersion } from "../versions/versionNames.js";
import { commandTarget } from "./commandTarget.js";
import { printJson, printTable, type CliSetup } from "./common.js";

/**
 * The projection the command acts on, which must be versioned.
 * @throws ReplayableError CONFIG_INVALID naming `command` when it is not.
 */
export function versionedProjection(setup: CliSetup, command: string): RegisteredProjection {
  const { projection } = commandTarget(setup);
  if (projection.versioned !== true)
    throw new ReplayableError(
      "CONFIG_INVALID",
      `${command}: projection ${projection.name} is not versioned; defineProjection({ versioned: true }) opts in to blue/green versions (docs/replay.md)`,
    );
  return projection;
}

/** `--version`'s value as a number. @throws ReplayableError CONFIG_INVALID naming the flag. */
export function versionOption(text: string): number {
  try {
    return parseVersion(text);
  } catch (error) {
    throw new ReplayableError("CONFIG_INVALID", errorMessage(error));
  }
}

/**
 * Prints a promote's or rollback's outcome (`verb`: "promote" or "rollback"); a refusal goes to
 * stderr with exit code 1.
 */
export function reportSwap(projection: string, verb: string, outcome: SwapOutcome, output: string): void {
  if (output === "json") printJson({ outcome: outcome.kind, ...outcome });
  const tables = outcome.comparison?.tables ?? [];
  if (output !== "json" && tables.length > 0)
    printTable(
      tables.map((t) => ({
        table: t.table,
        liveRows: t.live?.rows ?? "-",
        liveMd5: t.live?.md5 ?? "-",
        rows: t.candidate?.rows ?? "-",
        md5: t.candidate?.md5 ?? "-",
        equal: t.equal ? "yes" : "NO",
      })),
    );
  if (outcome.kind === "refused") {
    process.stderr.write(`replayable: ${verb} refused, nothing changed: ${outcome.message}\n`);
    process.exitCode = 1;
    return;
  }
  if (output === "json") return;
  const differing = tables.filter((t) => !t.equal).map((t) => t.table);
  process.stdout.write(
    `${verb === "promote" ? "Promoted" : "Rolled back"} projection ${projection}: version ${outcome.to} is live (was ${outcome.from}); views ${outcome.views.map((v) => `${projection}.${v}`).join(", ")} (audit row ${outcome.auditId} in replayable.projection_version_audit)${differing.length > 0 ? `; tables that differ from version ${outcome.from}: ${differing.join(", ")}` : ""}\n`,
  );
}
