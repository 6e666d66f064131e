/**
 * Which topics a command acts on when the operator names none: the topics the consumer group has
 * committed offsets for and the topics the projection has checkpoints for, so that a group that
 * consumed its own topics (`run --topic T`) is never confused with the projection's default topics.
 * Only when neither exists yet do the projection's default topics apply.
 */
import type pg from "pg";
import type { KafkaAdmin } from "../kafka/admin.js";
import type { Projection } from "../projection.js";
import { readCheckpoints } from "../sql/readCheckpoints.js";

/**
 * The topics to act on: `named` when given; else the group's committed topics and the
 * projection's checkpointed topics (sorted, each once); else the projection's default topics.
 */
export async function projectionTopics(
  admin: KafkaAdmin,
  db: pg.Pool | pg.ClientBase,
  projection: Pick<Projection<unknown>, "name" | "defaultTopics">,
  groupId: string,
  named: readonly string[],
): Promise<string[]> {
  if (named.length > 0) return [...named];
  const committed = (await admin.groupCommittedOffsets(groupId)).map((c) => c.topic);
  const checkpointed = (await readCheckpoints(db, projection.name)).map((c) => c.topic);
  const found = [...new Set([...committed, ...checkpointed])].sort();
  return found.length > 0 ? found : [...projection.defaultTopics];
}
