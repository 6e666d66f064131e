/**
 * The topics `promote` measures a shadow version's lag on (docs/design.md "Blue/green versions").
 *
 * The rule: the union of the topics the operator names (`--topic` or REPLAYABLE_TOPICS) and every
 * topic on which the live or the promoted version's consumer group has committed offsets or the
 * promoted version has checkpoints. `--topic` adds topics to the check and never narrows it: a
 * `--topic` list that missed a topic the versions consume let a version far behind on that topic be
 * promoted with its audit row claiming lag 0 (issue 16 follow-up). We measure the union rather than
 * refuse such a list because the union is what the promise "caught up on every topic it consumes"
 * needs, and an operator naming a new, not yet consumed topic (a changed projection that reads one
 * more) should not have to repeat the topics the groups already show. When neither names any topic,
 * the projection's default topics apply ({@link resolveProjectionTopics}).
 */
import type pg from "pg";
import type { ClusterAdmin } from "../kafka/admin.js";
import { readCheckpoints } from "../sql/readCheckpoints.js";

/** The topics to measure and how to name their source in an error about one of them. */
export interface LagTopics {
  /** Sorted, each once; empty: none named or consumed yet (the default topics apply). */
  readonly topics: string[];
  readonly label: string;
}

/**
 * The union of `named` and the topics `groupIds` have committed offsets for and `checkpointKey`
 * (the promoted version's dedupe key, `<name>@v<N>`) has checkpoints for.
 * @throws the KafkaJS error when a group's offsets cannot be fetched (e.g. no Describe ACL on it).
 */
export async function lagTopics(
  admin: ClusterAdmin,
  db: pg.Pool | pg.ClientBase,
  named: readonly string[],
  groupIds: readonly string[],
  checkpointKey: string,
): Promise<LagTopics> {
  const consumed: string[] = [];
  for (const groupId of groupIds)
    consumed.push(...(await admin.groupCommittedOffsets(groupId)).map((c) => c.topic));
  consumed.push(...(await readCheckpoints(db, checkpointKey)).map((c) => c.topic));
  const topics = [...new Set([...named, ...consumed])].sort();
  return {
    topics,
    label: `--topic or REPLAYABLE_TOPICS, or group ${groupIds.join(" or ")} has committed offsets or ${checkpointKey} has checkpoints for it`,
  };
}
