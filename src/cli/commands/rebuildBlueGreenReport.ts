/** What `rebuild --blue-green` prints: the new version, its group's partitions, a refusal. */
import type { BlueGreenOutcome } from "../../versions/blueGreenRebuild.js";
import { printJson, printTable } from "../common.js";

/**
 * Prints `outcome` as a table or JSON; a refusal goes to stderr with exit code 1.
 * @param runs true when the command goes on as the new version's member (no `--no-run`).
 */
export function reportBlueGreen(outcome: BlueGreenOutcome, output: "table" | "json", runs: boolean): void {
  if (outcome.kind === "refused") {
    if (output === "json")
      printJson({ outcome: "refused", reason: outcome.reason, message: outcome.message });
    process.stderr.write(`replayable: rebuild refused, nothing changed: ${outcome.message}\n`);
    process.exitCode = 1;
    return;
  }
  const { plan } = outcome;
  if (output === "json") {
    printJson({
      outcome: outcome.kind,
      ...(outcome.kind === "executed" ? { auditId: outcome.auditId, run: runs } : {}),
      projection: plan.projection,
      liveVersion: plan.liveVersion,
      version: plan.version,
      schema: plan.schema,
      groupId: plan.groupId,
      partitions: plan.rebuild.partitions,
      refusal: plan.refusal,
    });
    return;
  }
  const out = (line: string) => process.stdout.write(`${line}\n`);
  out(
    outcome.kind === "dry-run"
      ? `Dry run (nothing changed): blue/green rebuild of projection ${plan.projection}: version ${plan.version} (schema ${plan.schema}, group ${plan.groupId}) beside the live version ${plan.liveVersion}`
      : `Created version ${plan.version} of projection ${plan.projection} (schema ${plan.schema}, group ${plan.groupId}, audit row ${outcome.auditId}); the live version ${plan.liveVersion} keeps serving`,
  );
  printTable(
    plan.rebuild.partitions.map((p) => ({
      topic: p.topic,
      partition: p.partition,
      logStartOffset: p.logStartOffset,
      highWatermark: p.highWatermark,
      newOffset: p.newOffset,
      records: p.records,
    })),
  );
  if (outcome.kind === "dry-run") {
    out(
      `--execute would create schema ${plan.schema} with the projection's migrations and set group ${plan.groupId}'s offsets to the log start offsets.`,
    );
    if (plan.refusal !== undefined)
      out(`--execute would be refused now (${plan.refusal.reason}):\n${plan.refusal.message}`);
  } else if (runs) {
    out(
      `Going on as version ${plan.version}'s member (as \`replayable run --projection ${plan.projection} --version ${plan.version}\` does) to build it from the log; SIGTERM or Ctrl-C stops it. \`replayable promote --projection ${plan.projection} --version ${plan.version}\` once it has caught up.`,
    );
  } else {
    out(
      `Start \`replayable run --projection ${plan.projection} --version ${plan.version}\` to build it from the log, then \`replayable promote --projection ${plan.projection} --version ${plan.version}\` once it has caught up.`,
    );
  }
}
