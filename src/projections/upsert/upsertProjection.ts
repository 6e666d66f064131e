/**
 * A zero-code projection: the records of some topics become rows of one table, from a declaration
 * alone (upsertProjectionSpec.ts), applied set-based and effectively once by the engine's
 * dedupe-then-effect transaction (docs/design.md "The transaction").
 */
import type { Projection } from "../../projection.js";
import { applyUpsertOperations } from "./applyUpsertBatch.js";
import { upsertDecoder, type UpsertOperation } from "./upsertOperation.js";
import type { UpsertProjectionSpec } from "./upsertProjectionSpec.js";
import { upsertStatements } from "./upsertStatements.js";

/**
 * The projection of a parsed declaration:
 * - `decode` turns a record into an {@link UpsertOperation}, throwing a PermanentRecordError naming
 *   the field for anything that cannot be written (the engine dead-letters it with its bytes);
 * - `apply` writes or deletes one record's row; `applyBatch` does a batch in a few statements
 *   with the same outcome (applyUpsertBatch.ts explains the ordering);
 * - `tables` is the one table, which `rebuild` empties.
 * Check the table with validateUpsertProjection at start-up: the statements assume it matches.
 * @example
 * const spec = parseUpsertProjectionSpec(declaration, "projections[0]");
 * const problems = await validateUpsertProjection(spec, pool);
 * const projection = upsertProjection(spec);
 */
export function upsertProjection(spec: UpsertProjectionSpec): Projection<UpsertOperation> {
  const statements = upsertStatements(spec);
  return {
    name: spec.name,
    dedupe: spec.dedupe,
    defaultTopics: spec.topics,
    tables: [spec.table],
    decode: upsertDecoder(spec),
    apply: (ctx, record) => applyUpsertOperations(ctx.client, statements, [record.value]),
    applyBatch: (ctx, records) =>
      applyUpsertOperations(
        ctx.client,
        statements,
        records.map((r) => r.value),
      ),
    // The last write of a key wins: a dead letter retried after later records of its key would
    // overwrite their value or bring back the row their tombstone deleted.
    retryAfterLaterRecords: false,
  };
}
