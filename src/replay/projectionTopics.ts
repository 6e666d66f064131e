/**
 * Which topics a command acts on when the operator names none: the topics the consumer group has
 * committed offsets for, the topics the projection has checkpoints for, and the topics its members
 * consumed (`replayable.projection_topics`, recorded by `run` before it reads a record, so a topic
 * with no record applied or committed yet is not left out), so that a group that consumed its own
 * topics (`run --topic T`) is never confused with the projection's default topics. Only when none
 * exists yet do the projection's default topics apply.
 */
import type pg from "pg";
import type { ClusterAdmin } from "../kafka/admin.js";
import type { Projection } from "../projection.js";
import { readProjectionTopics } from "../sql/projectionTopics.js";
import { readCheckpoints } from "../sql/readCheckpoints.js";

/**
 * The topics to act on and where their names came from: `named` by the operator (--topic or
 * REPLAYABLE_TOPICS), `found` in the group's committed offsets, the projection's checkpoints or
 * the topics its members consumed (such a topic may have been deleted since), or the projection's
 * `default` topics.
 */
export interface ResolvedTopics {
  readonly topics: string[];
  readonly source: "named" | "found" | "default";
  /** How to name `source` in a message about one of the topics, e.g. "--topic or REPLAYABLE_TOPICS". */
  readonly label: string;
}

/**
 * The topics to act on: `named` when given; else the group's committed topics, the projection's
 * checkpointed topics and the topics its members consumed (sorted, each once); else the
 * projection's default topics.
 */
export async function resolveProjectionTopics(
  admin: ClusterAdmin,
  db: pg.Pool | pg.ClientBase,
  projection: Pick<Projection<unknown>, "name" | "defaultTopics">,
  groupId: string,
  named: readonly string[],
): Promise<ResolvedTopics> {
  if (named.length > 0) return { topics: [...named], source: "named", label: "--topic or REPLAYABLE_TOPICS" };
  const committed = (await admin.groupCommittedOffsets(groupId)).map((c) => c.topic);
  const checkpointed = (await readCheckpoints(db, projection.name)).map((c) => c.topic);
  const consumed = await readProjectionTopics(db, projection.name);
  const found = [...new Set([...committed, ...checkpointed, ...consumed])].sort();
  if (found.length > 0)
    return {
      topics: found,
      source: "found",
      label: `group ${groupId} has committed offsets for it, or projection ${projection.name} has checkpoints for it or consumed it`,
    };
  return {
    topics: [...projection.defaultTopics],
    source: "default",
    label: `the default topics of projection ${projection.name}; name others with --topic`,
  };
}

/** The topics of {@link resolveProjectionTopics}, without their source. */
export async function projectionTopics(
  admin: ClusterAdmin,
  db: pg.Pool | pg.ClientBase,
  projection: Pick<Projection<unknown>, "name" | "defaultTopics">,
  groupId: string,
  named: readonly string[],
): Promise<string[]> {
  return (await resolveProjectionTopics(admin, db, projection, groupId, named)).topics;
}
