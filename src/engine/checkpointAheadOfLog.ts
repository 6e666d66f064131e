/**
 * docs/design.md "Replay and rebuild": if a partition's high watermark is below its checkpoint, the
 * topic was deleted and recreated, or truncated. Reading on would skip the new records as
 * duplicates (their offsets are below the checkpoint), so the consumer stops instead.
 */
import { ReplayableError } from "../errors.js";
import { compareOffsets, type OffsetString } from "../offsets.js";

/**
 * The CHECKPOINT_AHEAD_OF_LOG error for one partition, or undefined when the high watermark is at
 * or above the checkpoint. Checked for every fetched batch (applyBatch) and for every assigned
 * partition when the member joins the group (ConsumerService), so an empty recreated topic is
 * caught too.
 */
export function checkpointAheadOfLog(
  projection: string,
  topic: string,
  partition: number,
  checkpoint: OffsetString,
  highWatermark: OffsetString,
): ReplayableError | undefined {
  if (compareOffsets(highWatermark, checkpoint) >= 0) return undefined;
  return new ReplayableError(
    "CHECKPOINT_AHEAD_OF_LOG",
    `${topic}/${partition}: the high watermark ${highWatermark} is below projection ${projection}'s checkpoint ${checkpoint}: the topic was deleted and recreated, or truncated. Records would be skipped as duplicates, so the consumer stops. If the topic was recreated on purpose, run \`replayable rebuild --projection ${projection} --group <its group>\`.`,
    { context: { topic, partition, checkpoint, highWatermark } },
  );
}
