/**
 * The admin operations of {@link ClusterAdmin} over @platformatic/kafka's `Admin` (issue 30): what
 * the CLI and the member ask of the cluster (topics, offsets, groups), with the same results and
 * refusals as the KafkaJS one (src/kafka/admin.ts), which test/integration/kafka/clusterAdmin.test.ts
 * checks against the same broker.
 */
import type { Admin as PlatformaticAdminClient } from "@platformatic/kafka";
import {
  GROUP_ID_NOT_FOUND,
  NON_EMPTY_GROUP,
  committed,
  groupOffsetsInOrder,
  type ClusterAdmin,
  type CommittedOffset,
  type GroupMember,
  type PartitionOffsets,
} from "../admin.js";
import type { PlatformaticKafka } from "./loadClient.js";
import type { PlatformaticSecurity } from "./platformaticSecurity.js";

/** ListOffsets timestamps (KIP-79): the log start offset and the high watermark. */
const EARLIEST = -2n;
const LATEST = -1n;

/** How long {@link PlatformaticAdmin.createTopic} waits for every new partition to have a leader, ms. */
const LEADERS_TIMEOUT_MS = 30_000;

/** Connection settings of the admin client. */
export interface PlatformaticAdminOptions {
  readonly brokers: readonly string[];
  readonly clientId: string;
  /** TLS and SASL (platformaticSecurity.ts); none: PLAINTEXT. */
  readonly security?: PlatformaticSecurity;
}

/** The admin operations over @platformatic/kafka; `close()` disconnects. */
export class PlatformaticAdmin implements ClusterAdmin {
  private constructor(
    private readonly kafka: PlatformaticKafka,
    private readonly admin: PlatformaticAdminClient,
  ) {}

  /**
   * Connects an admin client and reads the cluster's metadata once, so an unreachable cluster fails
   * here as KafkaJS's connect does.
   * @throws the client's error when no broker answers.
   */
  static async connect(
    kafka: PlatformaticKafka,
    options: PlatformaticAdminOptions,
  ): Promise<PlatformaticAdmin> {
    const admin = new kafka.Admin({
      clientId: options.clientId,
      bootstrapBrokers: [...options.brokers],
      ...options.security,
    });
    try {
      await admin.metadata({ topics: [] });
    } catch (error) {
      await admin.close().catch(() => undefined);
      throw error;
    }
    return new PlatformaticAdmin(kafka, admin);
  }

  async close(): Promise<void> {
    await this.admin.close();
  }

  async createTopic(
    topic: string,
    partitions: number,
    config: Record<string, string> = {},
  ): Promise<boolean> {
    if ((await this.listTopics()).includes(topic)) return false;
    await this.admin.createTopics({
      topics: [topic],
      partitions,
      replicas: 1,
      configs: Object.entries(config).map(([name, value]) => ({ name, value })),
    });
    await this.waitForLeaders(topic, partitions);
    return true;
  }

  async deleteTopics(topics: readonly string[]): Promise<void> {
    await this.admin.deleteTopics({ topics: [...topics] });
  }

  async listTopics(): Promise<string[]> {
    return this.admin.listTopics();
  }

  async topicOffsets(topic: string): Promise<PartitionOffsets[]> {
    const partitions = await this.partitionsOf(topic);
    const [earliest, latest] = await Promise.all([
      this.listOffsets(topic, partitions, EARLIEST),
      this.listOffsets(topic, partitions, LATEST),
    ]);
    return partitions.map((partition) => ({
      partition,
      logStartOffset: earliest.get(partition)!,
      highWatermark: latest.get(partition)!,
    }));
  }

  async committedOffsets(groupId: string, topics: readonly string[]): Promise<CommittedOffset[]> {
    const asked = await Promise.all(
      topics.map(async (name) => ({ name, partitionIndexes: await this.partitionsOf(name) })),
    );
    const [group] = await this.admin.listConsumerGroupOffsets({ groups: [{ groupId, topics: asked }] });
    const found = new Map<string, string>();
    for (const t of group?.topics ?? [])
      for (const p of t.partitions) found.set(`${t.name}/${p.partitionIndex}`, String(p.committedOffset));
    // Every partition asked, "-1" where the group has none (as KafkaJS's fetchOffsets answers).
    return asked.flatMap((t) =>
      t.partitionIndexes.map((partition) =>
        committed(t.name, partition, found.get(`${t.name}/${partition}`) ?? "-1"),
      ),
    );
  }

  async groupCommittedOffsets(groupId: string): Promise<CommittedOffset[]> {
    // A null topic list (OffsetFetch v2+): every partition the group has an offset for.
    const [group] = await this.admin.listConsumerGroupOffsets({ groups: [{ groupId, topics: null }] });
    return groupOffsetsInOrder(
      (group?.topics ?? []).flatMap((t) =>
        t.partitions.map((p) => committed(t.name, p.partitionIndex, String(p.committedOffset))),
      ),
    );
  }

  async cleanupPolicies(topics: readonly string[]): Promise<Map<string, string>> {
    const policies = new Map<string, string>();
    if (topics.length === 0) return policies;
    const described = await this.admin.describeConfigs({
      includeSynonyms: false,
      resources: topics.map((resourceName) => ({
        resourceType: this.kafka.ConfigResourceTypes.TOPIC,
        resourceName,
        configurationKeys: ["cleanup.policy"],
      })),
    });
    for (const resource of described) {
      const entry = resource.configs.find((c) => c.name === "cleanup.policy");
      if (entry?.value !== undefined && entry.value !== null)
        policies.set(resource.resourceName, entry.value);
    }
    return policies;
  }

  async topicExists(topic: string): Promise<boolean> {
    return (await this.listTopics()).includes(topic);
  }

  /**
   * The group's state and members, whichever group protocol it runs: DescribeGroups answers for a
   * classic group; a KIP-848 (consumer protocol) group it reports as Dead, so a Dead answer is
   * asked again with ConsumerGroupDescribe (KIP-848's API 69) at the group's coordinator.
   */
  async describeGroup(groupId: string): Promise<{ state: string; members: GroupMember[] }> {
    const groups = await this.admin.describeGroups({ groups: [groupId] });
    const group = groups.get(groupId);
    if (group === undefined || stateName(group.state) === "Dead") return this.describeConsumerGroup(groupId);
    return {
      state: stateName(group.state),
      members: [...group.members.values()].map((m) => ({
        memberId: m.id,
        clientId: m.clientId,
        clientHost: m.clientHost,
      })),
    };
  }

  /**
   * ConsumerGroupDescribe of a KIP-848 group at its coordinator; Dead when there is no such group
   * (GROUP_ID_NOT_FOUND) or the broker has no ConsumerGroupDescribe (before Kafka 3.7, where no
   * group runs the consumer protocol).
   * @throws the client's error for any other failure (an ACL, no coordinator).
   */
  private async describeConsumerGroup(groupId: string): Promise<{ state: string; members: GroupMember[] }> {
    const lib = this.kafka;
    const admin = this.admin;
    const dead = { state: "Dead", members: [] };
    type Api = { async: (...args: unknown[]) => Promise<unknown> };
    const api = await new Promise<Api | undefined>((resolve, reject) => {
      admin[lib.kGetApi]("ConsumerGroupDescribe", ((error: Error | null, found?: Api) => {
        if (error instanceof lib.UnsupportedApiError) resolve(undefined);
        else if (error) reject(error);
        else resolve(found);
      }) as Parameters<PlatformaticAdminClient[typeof lib.kGetApi]>[1]);
    });
    if (api === undefined) return dead;
    const [coordinator] = await admin.findCoordinator({
      keyType: lib.FindCoordinatorKeyTypes.GROUP,
      keys: [groupId],
    });
    if (coordinator === undefined) return dead;
    type Connection = Parameters<Parameters<PlatformaticAdminClient[typeof lib.kGetConnection]>[1]>[1];
    const connection = await new Promise<Connection>((resolve, reject) => {
      admin[lib.kGetConnection](coordinator, (error, c) => (error ? reject(error) : resolve(c)));
    });
    // The library does not export the response type; the fields read here (KIP-848's schema).
    type ConsumerGroupDescribeResponse = {
      groups: {
        groupId: string;
        groupState: string;
        members: { memberId: string; clientId: string; clientHost: string }[];
      }[];
    };
    let answer: ConsumerGroupDescribeResponse;
    try {
      answer = (await api.async(connection, [groupId], false)) as ConsumerGroupDescribeResponse;
    } catch (error) {
      if (protocolErrorCodes(error).includes(GROUP_ID_NOT_FOUND)) return dead;
      throw error;
    }
    const group = answer.groups.find((g) => g.groupId === groupId);
    if (group === undefined) return dead;
    return {
      state: stateName(group.groupState),
      members: group.members.map((m) => ({
        memberId: m.memberId,
        clientId: m.clientId,
        clientHost: m.clientHost,
      })),
    };
  }

  async deleteGroup(groupId: string): Promise<"deleted" | "absent" | "has-members"> {
    try {
      await this.admin.deleteGroups({ groups: [groupId] });
      return "deleted";
    } catch (error) {
      const codes = protocolErrorCodes(error);
      if (codes.includes(GROUP_ID_NOT_FOUND)) return "absent";
      if (codes.includes(NON_EMPTY_GROUP)) return "has-members";
      throw error;
    }
  }

  /**
   * Sets the group's committed offsets of `topic`: refused (throws) unless the group is Empty or
   * Dead, as `kafka-consumer-groups --reset-offsets --execute` and KafkaJS's setOffsets refuse;
   * then one OffsetCommit outside any generation (AlterConsumerGroupOffsets, as Java's Admin sends).
   * @throws Error naming the group's state when it has members.
   */
  async setOffsets(
    groupId: string,
    topic: string,
    partitions: readonly { partition: number; offset: string }[],
  ): Promise<void> {
    const { state } = await this.describeGroup(groupId);
    if (state !== "Empty" && state !== "Dead")
      throw new Error(
        `cannot set the offsets of consumer group ${groupId} while it is ${state}: stop its members first`,
      );
    await this.admin.alterConsumerGroupOffsets({
      groupId,
      topics: [
        {
          name: topic,
          partitionOffsets: partitions.map((p) => ({ partition: p.partition, offset: BigInt(p.offset) })),
        },
      ],
    });
  }

  async offsetsForTimestamp(
    topic: string,
    timestampMs: number,
  ): Promise<{ partition: number; offset: string }[]> {
    const partitions = await this.partitionsOf(topic);
    const found = await this.listOffsets(topic, partitions, BigInt(timestampMs));
    const latest = await this.listOffsets(topic, partitions, LATEST);
    // No record at or after the time: ListOffsets answers -1; the high watermark, as KafkaJS gives.
    return partitions.map((partition) => {
      const offset = found.get(partition)!;
      return { partition, offset: offset === "-1" ? latest.get(partition)! : offset };
    });
  }

  async deleteRecords(
    topic: string,
    partitions: readonly { partition: number; offset: string }[],
  ): Promise<void> {
    await this.admin.deleteRecords({
      topics: [
        {
          name: topic,
          partitions: partitions.map((p) => ({ partition: p.partition, offset: BigInt(p.offset) })),
        },
      ],
    });
  }

  /** The partition numbers of `topic`, ascending. @throws the client's error for an unknown topic. */
  private async partitionsOf(topic: string): Promise<number[]> {
    const metadata = await this.admin.metadata({ topics: [topic], forceUpdate: true });
    const found = metadata.topics.get(topic);
    if (found === undefined) throw new Error(`topic ${topic} does not exist`);
    return found.partitions.map((_, partition) => partition);
  }

  /** ListOffsets of every partition at `timestamp` (or EARLIEST / LATEST), as decimal strings. */
  private async listOffsets(
    topic: string,
    partitions: readonly number[],
    timestamp: bigint,
  ): Promise<Map<number, string>> {
    const listed = await this.admin.listOffsets({
      topics: [
        { name: topic, partitions: partitions.map((partitionIndex) => ({ partitionIndex, timestamp })) },
      ],
    });
    const offsets = new Map<number, string>();
    for (const t of listed) for (const p of t.partitions) offsets.set(p.partitionIndex, String(p.offset));
    return offsets;
  }

  /** Waits until every partition of a new topic has a leader (KafkaJS's `waitForLeaders`). */
  private async waitForLeaders(topic: string, partitions: number): Promise<void> {
    const deadline = Date.now() + LEADERS_TIMEOUT_MS;
    for (;;) {
      const metadata = await this.admin
        .metadata({ topics: [topic], forceUpdate: true })
        .catch(() => undefined);
      const found = metadata?.topics.get(topic);
      if (
        found !== undefined &&
        found.partitions.length === partitions &&
        found.partitions.every((p) => p.leader >= 0)
      )
        return;
      if (Date.now() > deadline)
        throw new Error(`topic ${topic}: its partitions have no leader after ${LEADERS_TIMEOUT_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** The group state's name as Kafka's tools print it (`Empty`, `Stable`, …) from the client's value. */
function stateName(state: string): string {
  const known = [
    "Unknown",
    "PreparingRebalance",
    "CompletingRebalance",
    "Stable",
    "Dead",
    "Empty",
    "Assigning",
    "Reconciling",
  ];
  const compact = state.replace(/[_\s]/g, "").toLowerCase();
  return known.find((k) => k.toLowerCase() === compact) ?? state;
}

/** The Kafka protocol error codes an error of the client carries (its `errors` for several). */
function protocolErrorCodes(error: unknown): number[] {
  const codes: number[] = [];
  const visit = (e: unknown, depth: number): void => {
    if (e === null || typeof e !== "object" || depth > 4) return;
    const { apiCode, errors } = e as { apiCode?: unknown; errors?: unknown };
    if (typeof apiCode === "number") codes.push(apiCode);
    if (Array.isArray(errors)) for (const inner of errors) visit(inner, depth + 1);
    const cause = (e as { cause?: unknown }).cause;
    if (cause !== undefined) visit(cause, depth + 1);
  };
  visit(error, 0);
  return codes;
}
