/** Cluster-side reads and writes over the KafkaJS admin client: topics, offsets, group members. */
import kafkajs, { type Admin, type Kafka } from "kafkajs";
import { committedOffsetOrNone } from "../offsets.js";
import { missingTopicsError } from "./missingTopicsError.js";

/** A partition's offsets: log start offset (low) and high watermark (high), as strings. */
export interface PartitionOffsets {
  readonly partition: number;
  readonly logStartOffset: string;
  readonly highWatermark: string;
}

/**
 * A consumer group's committed offset of one partition: "-1" when there is none, which includes
 * every negative offset Kafka returns ({@link committedOffsetOrNone}).
 */
export interface CommittedOffset {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
}

/** How {@link CommittedOffset} says "none". */
export const NO_COMMITTED_OFFSET = "-1";

/** A {@link CommittedOffset} from what the broker answered (any negative offset: "-1"). Shared by both clients' admins. */
export function committed(topic: string, partition: number, offset: string): CommittedOffset {
  return { topic, partition, offset: committedOffsetOrNone(offset) ?? NO_COMMITTED_OFFSET };
}

/** Kafka protocol error codes of DeleteGroups (org.apache.kafka.common.protocol.Errors). */
export const NON_EMPTY_GROUP = 68;
export const GROUP_ID_NOT_FOUND = 69;

/**
 * The committed offsets a group has (none left out but "-1"), by topic then partition: what
 * `groupCommittedOffsets` returns over either client.
 */
export function groupOffsetsInOrder(offsets: readonly CommittedOffset[]): CommittedOffset[] {
  return offsets
    .filter((c) => c.offset !== NO_COMMITTED_OFFSET)
    .sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1));
}

/** The error code KafkaJS's KafkaJSDeleteGroupsError reports for `groupId`, if it is one. */
function deleteGroupsErrorCode(error: unknown, groupId: string): number | undefined {
  const groups = (error as { groups?: unknown } | null)?.groups;
  if (!Array.isArray(groups)) return undefined;
  const entry = (groups as { groupId?: unknown; errorCode?: unknown }[]).find((g) => g.groupId === groupId);
  return typeof entry?.errorCode === "number" ? entry.errorCode : undefined;
}

/**
 * Kafka's answers while a group's coordinator is moving or still loading: a broker that has just
 * started creates `__consumer_offsets` on the first group request and answers NOT_COORDINATOR until
 * it leads its partitions. KafkaJS's admin passes them on from OffsetFetch instead of retrying.
 */
const COORDINATOR_NOT_READY = new Set([
  // KafkaJS's names of Kafka's errors 16, 14 and 15 (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
  // COORDINATOR_NOT_AVAILABLE).
  "NOT_COORDINATOR_FOR_GROUP",
  "GROUP_LOAD_IN_PROGRESS",
  "GROUP_COORDINATOR_NOT_AVAILABLE",
]);

/** How long {@link coordinatorReady} retries, ms. */
const COORDINATOR_WAIT_MS = 30_000;

/**
 * Runs `request` again while the group's coordinator is not ready ({@link COORDINATOR_NOT_READY}),
 * every 200 ms for up to {@link COORDINATOR_WAIT_MS}.
 * @throws the last error once that time is spent, or any other error at once.
 */
async function coordinatorReady<T>(request: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + COORDINATOR_WAIT_MS;
  for (;;) {
    try {
      return await request();
    } catch (error) {
      const type = (error as { type?: unknown } | null)?.type;
      if (typeof type !== "string" || !COORDINATOR_NOT_READY.has(type) || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

/** A member of a consumer group as the coordinator describes it. */
export interface GroupMember {
  readonly memberId: string;
  readonly clientId: string;
  readonly clientHost: string;
}

/**
 * The admin operations the CLI, the member and tests use, whichever Kafka client carries them:
 * {@link KafkaAdmin} (KafkaJS) or `PlatformaticAdmin` (src/kafka/platformatic/platformaticAdmin.ts;
 * issue 30). Both give the same answers: test/integration/kafka/clusterAdmin.test.ts runs both.
 */
export type ClusterAdmin = Pick<KafkaAdmin, keyof KafkaAdmin>;

/** The admin operations over KafkaJS; `close()` disconnects. */
export class KafkaAdmin {
  private constructor(private readonly admin: Admin) {}

  /** Connects an admin client. @throws the KafkaJS connection error when no broker answers. */
  static async connect(kafka: Kafka): Promise<KafkaAdmin> {
    const admin = kafka.admin();
    await admin.connect();
    return new KafkaAdmin(admin);
  }

  /** Disconnects. */
  async close(): Promise<void> {
    await this.admin.disconnect();
  }

  /** Creates `topic` with `partitions` partitions (replication factor 1) unless it exists; true when created. */
  async createTopic(
    topic: string,
    partitions: number,
    config: Record<string, string> = {},
  ): Promise<boolean> {
    // Asking first keeps KafkaJS from logging TOPIC_ALREADY_EXISTS as an error.
    if ((await this.admin.listTopics()).includes(topic)) return false;
    return this.admin.createTopics({
      waitForLeaders: true,
      topics: [
        {
          topic,
          numPartitions: partitions,
          replicationFactor: 1,
          configEntries: Object.entries(config).map(([name, value]) => ({ name, value })),
        },
      ],
    });
  }

  /** Deletes topics. */
  async deleteTopics(topics: readonly string[]): Promise<void> {
    await this.admin.deleteTopics({ topics: [...topics] });
  }

  /** The names of all topics. */
  async listTopics(): Promise<string[]> {
    return this.admin.listTopics();
  }

  /** Log start offset and high watermark of each partition of `topic`, by partition. */
  async topicOffsets(topic: string): Promise<PartitionOffsets[]> {
    const offsets = await this.admin.fetchTopicOffsets(topic);
    return offsets
      .map((o) => ({ partition: o.partition, logStartOffset: o.low, highWatermark: o.high }))
      .sort((a, b) => a.partition - b.partition);
  }

  /** The group's committed offsets for `topics` ("-1" where none, also for any other negative offset). */
  async committedOffsets(groupId: string, topics: readonly string[]): Promise<CommittedOffset[]> {
    const result = await coordinatorReady(() => this.admin.fetchOffsets({ groupId, topics: [...topics] }));
    return result.flatMap((t) => t.partitions.map((p) => committed(t.topic, p.partition, p.offset)));
  }

  /**
   * Every partition the group has a committed offset for (what `--all-topics` of
   * `kafka-consumer-groups --reset-offsets` resets), by topic then partition.
   * OffsetFetch with a null topic list (v2+) returns all of them.
   */
  async groupCommittedOffsets(groupId: string): Promise<CommittedOffset[]> {
    const result = await coordinatorReady(() => this.admin.fetchOffsets({ groupId }));
    return groupOffsetsInOrder(
      result.flatMap((t) => t.partitions.map((p) => committed(t.topic, p.partition, p.offset))),
    );
  }

  /**
   * Each topic's `cleanup.policy` as the broker applies it (DescribeConfigs; the broker's
   * `log.cleanup.policy` when the topic does not set it): `delete`, `compact` or `compact,delete`.
   * @returns topic → policy, for every topic asked.
   * @throws the KafkaJS error when a topic does not exist or the request fails.
   */
  async cleanupPolicies(topics: readonly string[]): Promise<Map<string, string>> {
    const policies = new Map<string, string>();
    if (topics.length === 0) return policies;
    const { resources } = await this.admin.describeConfigs({
      includeSynonyms: false,
      resources: topics.map((name) => ({
        // A CommonJS export Node's named-export detection misses: read it from the module object.
        type: kafkajs.ConfigResourceTypes.TOPIC,
        name,
        configNames: ["cleanup.policy"],
      })),
    });
    for (const resource of resources) {
      const entry = resource.configEntries.find((e) => e.configName === "cleanup.policy");
      if (entry !== undefined) policies.set(resource.resourceName, entry.configValue);
    }
    return policies;
  }

  /** True when `topic` exists (a metadata request; no retries on an unknown topic). */
  async topicExists(topic: string): Promise<boolean> {
    return (await this.admin.listTopics()).includes(topic);
  }

  /**
   * The group's current members (empty when the group is inactive) and its state. A group of
   * KIP-848's consumer protocol is reported as Dead with no members: DescribeGroups answers so and
   * KafkaJS has no ConsumerGroupDescribe (PlatformaticAdmin asks it).
   */
  async describeGroup(groupId: string): Promise<{ state: string; members: GroupMember[] }> {
    const { groups } = await this.admin.describeGroups([groupId]);
    const group = groups[0];
    if (group === undefined) return { state: "Dead", members: [] };
    return {
      state: group.state,
      members: group.members.map((m) => ({
        memberId: m.memberId,
        clientId: m.clientId,
        clientHost: m.clientHost,
      })),
    };
  }

  /**
   * Deletes consumer group `groupId` with its committed offsets (DeleteGroups, KIP-229; what
   * `kafka-consumer-groups --delete --group` sends). The coordinator refuses a group with members
   * (NON_EMPTY_GROUP), so a member that joined after the caller's describe is never cut off.
   * @returns `deleted`, `absent` (GROUP_ID_NOT_FOUND: already gone, or never committed anything) or
   *   `has-members` (NON_EMPTY_GROUP: nothing deleted).
   * @throws the KafkaJS error for any other failure (an ACL, no coordinator).
   */
  async deleteGroup(groupId: string): Promise<"deleted" | "absent" | "has-members"> {
    try {
      await this.admin.deleteGroups([groupId]);
      return "deleted";
    } catch (error) {
      const code = deleteGroupsErrorCode(error, groupId);
      if (code === GROUP_ID_NOT_FOUND) return "absent";
      if (code === NON_EMPTY_GROUP) return "has-members";
      throw error;
    }
  }

  /**
   * Sets the group's committed offsets of `topic` (the group must be inactive). KafkaJS does it by
   * joining the group with a short-lived member that seeks and commits, and refuses (throws) unless
   * the group's state is Empty or Dead, as `kafka-consumer-groups --reset-offsets --execute` does.
   */
  async setOffsets(
    groupId: string,
    topic: string,
    partitions: readonly { partition: number; offset: string }[],
  ): Promise<void> {
    await this.admin.setOffsets({ groupId, topic, partitions: partitions.map((p) => ({ ...p })) });
  }

  /** Offsets of the first record at or after `timestampMs` per partition (the high watermark when none). */
  async offsetsForTimestamp(
    topic: string,
    timestampMs: number,
  ): Promise<{ partition: number; offset: string }[]> {
    const result = await this.admin.fetchTopicOffsetsByTimestamp(topic, timestampMs);
    return result.map((r) => ({ partition: r.partition, offset: r.offset }));
  }

  /** Deletes records below `offset` per partition, moving the log start offset (KIP-107). */
  async deleteRecords(
    topic: string,
    partitions: readonly { partition: number; offset: string }[],
  ): Promise<void> {
    // KafkaJS looks the partition leaders up in its metadata cache without loading it first
    // (KafkaJSTopicMetadataNotLoaded on a fresh client): load it.
    await this.admin.fetchTopicMetadata({ topics: [topic] });
    await this.admin.deleteTopicRecords({ topic, partitions: partitions.map((p) => ({ ...p })) });
  }
}

/**
 * Checks that every topic exists, so a misspelt name fails at start with its name instead of
 * KafkaJS's "This server does not host this topic-partition".
 * @param source where the names came from, for the message (e.g. "REPLAYABLE_TOPICS or --topic").
 * @throws ReplayableError CONFIG_INVALID naming the missing topics ({@link missingTopicsError}).
 */
export async function assertTopicsExist(
  kafka: Kafka,
  topics: readonly string[],
  source: string,
): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = topics.filter((t) => !existing.has(t));
    if (missing.length > 0) throw missingTopicsError(missing, source);
  } finally {
    await admin.disconnect();
  }
}
