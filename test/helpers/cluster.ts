/**
 * Fault tools for the tests of the `cluster` project (test/cluster/), which run against the local
 * three-node KRaft cluster that `KAFKA_NODES=3 scripts/kafka/kafka.sh up` starts (node.id 1..3,
 * each a combined broker + controller; see {@link CLUSTER_BROKERS}):
 * - stop a broker (SIGTERM: controlled shutdown, its leaders move first), kill one (SIGKILL: a
 *   crash; its leaders move once the controller fences it, after `broker.session.timeout.ms`,
 *   9 s by default), start it again and wait until it is back in the cluster;
 * - move a partition's leader without stopping anything ({@link moveLeader}), or with the old
 *   leader out of the replica set, which a KafkaJS consumer notices ({@link reassignPartition});
 *   read leaders, replicas and the ISR ({@link partitionState}); create topics with replication
 *   factor 3 and `min.insync.replicas` 2 ({@link createReplicatedTopic}).
 *
 * The broker processes belong to kafka.sh (pid files under .data/kafka-cluster); these helpers run
 * it asynchronously (never execFileSync: an in-process consumer must keep heartbeating while a
 * broker restarts). Every wait is a poll with a deadline ({@link waitFor}), never a fixed sleep.
 * Metadata is read with a fresh KafkaJS admin client per call, so no client cache hides a change.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { createKafka } from "../../src/kafka/client.js";
import { createLogger } from "../../src/logger.js";
import { CLUSTER_BROKERS, CLUSTER_NODES } from "./clusterBrokers.js";
import { BROKERS, waitFor } from "./stack.js";

export { CLUSTER_BROKERS, CLUSTER_NODES };

const execFileAsync = promisify(execFile);
const KAFKA_SH = join(import.meta.dirname, "..", "..", "scripts", "kafka", "kafka.sh");

/** Leader, replicas (in preference order: the first is the preferred leader) and ISR of a partition, by broker id. */
export interface PartitionState {
  readonly partition: number;
  /** Broker id of the leader; -1 while the partition has none (every ISR member down). */
  readonly leader: number;
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
}

/** Options of {@link createReplicatedTopic}. */
export interface ReplicatedTopicOptions {
  /** Replicas per partition; default 3 (every broker). */
  readonly replicationFactor?: number;
  /**
   * `min.insync.replicas` of the topic; default 2: a produce with acks=-1 (all) succeeds while at
   * least 2 replicas are in sync, so one broker may be down (Kafka docs, "min.insync.replicas").
   */
  readonly minInsync?: number;
  /** Further topic configs (e.g. `{ "cleanup.policy": "compact" }`). */
  readonly config?: Readonly<Record<string, string>>;
}

/**
 * Runs `scripts/kafka/kafka.sh <args>` for the cluster (KAFKA_NODES=3) without blocking the event
 * loop; resolves with its stdout.
 * @throws Error with the command's stderr when it exits non-zero or runs over `timeoutMs`.
 */
async function kafkaSh(args: readonly string[], timeoutMs = 240_000): Promise<string> {
  try {
    const { stdout } = await execFileAsync(KAFKA_SH, [...args], {
      env: { ...process.env, KAFKA_NODES: String(CLUSTER_NODES) },
      timeout: timeoutMs,
    });
    return stdout;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? "";
    throw new Error(`kafka.sh ${args.join(" ")} failed: ${stderr.trim() || String(error)}`, { cause: error });
  }
}

/**
 * A KafkaJS client of the cluster (KAFKA_BROKERS, which the `cluster` project points at it) that
 * logs nothing: while a broker is down, every connection attempt to it would log an error line.
 */
export function quietKafka() {
  return createKafka({ brokers: BROKERS, clientId: "replayable-test-cluster", log: createLogger("silent") });
}

/** Runs `use` with a fresh, connected KafkaJS admin client of the cluster, then disconnects it. */
async function withAdmin<T>(use: (admin: ReturnType<ReturnType<typeof quietKafka>["admin"]>) => Promise<T>) {
  const admin = quietKafka().admin();
  await admin.connect();
  try {
    return await use(admin);
  } finally {
    await admin.disconnect();
  }
}

/** Broker ids the cluster lists in its metadata (registered and not fenced), ascending. */
export async function liveBrokerIds(): Promise<number[]> {
  const { brokers } = await withAdmin((admin) => admin.describeCluster());
  return brokers.map((b) => b.nodeId).sort((a, b) => a - b);
}

/** Leader, replicas and ISR of every partition of `topic`, by partition. */
export async function topicState(topic: string): Promise<PartitionState[]> {
  const { topics } = await withAdmin((admin) => admin.fetchTopicMetadata({ topics: [topic] }));
  const partitions = topics.find((t) => t.name === topic)?.partitions ?? [];
  return partitions
    .map((p) => ({ partition: p.partitionId, leader: p.leader, replicas: p.replicas, isr: p.isr }))
    .sort((a, b) => a.partition - b.partition);
}

/**
 * Leader, replicas and ISR of one partition.
 * @throws Error when `topic` has no such partition.
 */
export async function partitionState(topic: string, partition: number): Promise<PartitionState> {
  const state = (await topicState(topic)).find((p) => p.partition === partition);
  if (state === undefined) throw new Error(`topic ${topic} has no partition ${partition}`);
  return state;
}

/** The broker id leading `topic`/`partition` as the metadata says now (-1 when it has no leader). */
export async function leaderOf(topic: string, partition: number): Promise<number> {
  return (await partitionState(topic, partition)).leader;
}

/**
 * Creates `name` with `partitions` partitions at replication factor 3 and `min.insync.replicas` 2
 * (by default), and waits until every partition has a leader and a full ISR.
 * @throws Error when the topic exists already or the ISR is not full within 60 s.
 */
export async function createReplicatedTopic(
  name: string,
  partitions: number,
  options: ReplicatedTopicOptions = {},
): Promise<void> {
  const replicationFactor = options.replicationFactor ?? 3;
  const config = { "min.insync.replicas": String(options.minInsync ?? 2), ...options.config };
  const created = await withAdmin((admin) =>
    admin.createTopics({
      waitForLeaders: true,
      topics: [
        {
          topic: name,
          numPartitions: partitions,
          replicationFactor,
          configEntries: Object.entries(config).map(([key, value]) => ({ name: key, value })),
        },
      ],
    }),
  );
  if (!created) throw new Error(`topic ${name} exists already`);
  await waitFor(
    `every partition of ${name} to have a leader and ${replicationFactor} in-sync replicas`,
    async () => {
      const state = await topicState(name);
      return state.length === partitions &&
        state.every((p) => p.leader >= 0 && p.isr.length === replicationFactor)
        ? true
        : undefined;
    },
  );
}

/**
 * Moves the leader of `topic`/`partition` to broker `toBrokerId` without stopping anything:
 * reorders the replica list so the target is the preferred (first) replica
 * (`alterPartitionReassignments`, same replica set, KIP-455), runs a preferred leader election
 * (`electLeaders`, KIP-460) through scripts/kafka/MoveLeader.java (KafkaJS has no electLeaders), then
 * waits until KafkaJS's metadata shows the new leader. KafkaJS consumers do not notice: the old leader, now a follower, keeps answering their fetches (KIP-392,
 * Fetch v11+), until their metadata is refreshed; see {@link reassignPartition} for a move they see.
 * @returns the partition's state once the target leads.
 * @throws Error when the target is not a replica, or is not in the ISR within 90 s.
 */
export async function moveLeader(
  topic: string,
  partition: number,
  toBrokerId: number,
): Promise<PartitionState> {
  await kafkaSh(["move-leader", topic, String(partition), String(toBrokerId)]);
  return waitFor(`broker ${toBrokerId} to lead ${topic}/${partition} in the metadata`, async () => {
    const state = await partitionState(topic, partition);
    return state.leader === toBrokerId ? state : undefined;
  });
}

/**
 * Makes `replicas` the replica list of `topic`/`partition`, in that order, and its first broker
 * the leader (`alterPartitionReassignments`, KIP-455, then a preferred leader election, through
 * scripts/kafka/MoveLeader.java), then waits until the metadata shows both. Replicas added are
 * copied and must join the ISR first; replicas left out are deleted from their broker.
 *
 * Leaving the current leader out is how a test makes a KafkaJS consumer notice a leader change:
 * after {@link moveLeader} the old leader stays a follower and keeps serving the consumer's
 * fetches (Fetch v11+ carries client metadata, so a follower may answer a consumer, KIP-392);
 * a broker that holds no replica any more answers NOT_LEADER_OR_FOLLOWER, and KafkaJS then
 * refreshes its metadata and rejoins the group (`recoverFromFetch`).
 * @returns the partition's state once the first broker leads with that replica list.
 * @throws Error when the reassignment or the election does not finish within 90 s.
 */
export async function reassignPartition(
  topic: string,
  partition: number,
  replicas: readonly number[],
): Promise<PartitionState> {
  const leader = replicas[0];
  if (leader === undefined) throw new Error("reassignPartition: give at least one replica");
  await kafkaSh(["reassign", topic, String(partition), replicas.join(",")]);
  const wanted = [...replicas].sort().join(",");
  return waitFor(
    `${topic}/${partition} to have replicas ${replicas.join(",")} led by ${leader}`,
    async () => {
      const state = await partitionState(topic, partition);
      return state.leader === leader && [...state.replicas].sort().join(",") === wanted ? state : undefined;
    },
  );
}

/**
 * Stops broker `brokerId` with SIGTERM: a controlled shutdown, which moves its leaders to other
 * in-sync replicas before it exits (KIP-631 controlled shutdown in KRaft). Waits until the process
 * has exited and the metadata no longer lists the broker. Its data stays; {@link restartBroker}.
 * @throws Error when kafka.sh fails or the broker is still listed after 60 s.
 */
export async function stopBroker(brokerId: number): Promise<void> {
  await kafkaSh(["stop-node", String(brokerId)]);
  await waitFor(`broker ${brokerId} to leave the cluster metadata`, async () =>
    (await liveBrokerIds()).includes(brokerId) ? undefined : true,
  );
}

/**
 * Kills broker `brokerId` with SIGKILL (a crash: no controlled shutdown, nothing flushed) and waits
 * until the process is gone. The controller fences it and moves its leaders only after
 * `broker.session.timeout.ms` (9 s by default); wait for that with {@link waitForLeaderOff} or
 * {@link leaderOf}. Its data stays; {@link restartBroker}.
 * @throws Error when kafka.sh fails.
 */
export async function killBroker(brokerId: number): Promise<void> {
  await kafkaSh(["kill-node", String(brokerId)]);
}

/**
 * Starts broker `brokerId` again on its data (after {@link stopBroker} or {@link killBroker}) and
 * waits until its client port answers and the metadata lists it with every other node. It then
 * catches up as a follower; wait for the ISR with {@link waitForInSync}.
 * @throws Error when it does not come back within kafka.sh's timeout (180 s).
 */
export async function restartBroker(brokerId: number): Promise<void> {
  await kafkaSh(["start-node", String(brokerId)]);
  await waitFor(`broker ${brokerId} to be listed in the cluster metadata`, async () =>
    (await liveBrokerIds()).includes(brokerId) ? true : undefined,
  );
}

/**
 * Waits until no partition of `topic` is led by `brokerId` (and every partition has a leader):
 * the moment its leaders moved after a stop or a kill.
 * @returns the topic's state then.
 */
export async function waitForLeaderOff(
  topic: string,
  brokerId: number,
  timeoutMs = 60_000,
): Promise<PartitionState[]> {
  return waitFor(
    `the leaders of ${topic} to move off broker ${brokerId}`,
    async () => {
      const state = await topicState(topic);
      return state.every((p) => p.leader >= 0 && p.leader !== brokerId) ? state : undefined;
    },
    timeoutMs,
  );
}

/**
 * Waits until `brokerId` is in the ISR of every partition of `topic` it replicates (a restarted
 * broker rejoins the ISR once it has caught up with the leader, `replica.lag.time.max.ms`).
 * @returns the topic's state then.
 */
export async function waitForInSync(
  topic: string,
  brokerId: number,
  timeoutMs = 90_000,
): Promise<PartitionState[]> {
  return waitFor(
    `broker ${brokerId} to rejoin the ISR of every partition of ${topic}`,
    async () => {
      const state = await topicState(topic);
      return state.every((p) => !p.replicas.includes(brokerId) || p.isr.includes(brokerId))
        ? state
        : undefined;
    },
    timeoutMs,
  );
}

/** The partitions of `topic` each broker leads now, by broker id (brokers leading none are absent). */
export async function partitionsByLeader(topic: string): Promise<Map<number, number[]>> {
  const byLeader = new Map<number, number[]>();
  for (const p of await topicState(topic)) {
    if (p.leader < 0) continue;
    byLeader.set(p.leader, [...(byLeader.get(p.leader) ?? []), p.partition]);
  }
  return byLeader;
}

/**
 * Starts every node that is not running (`kafka.sh up`, idempotent) and waits until the metadata
 * lists all {@link CLUSTER_NODES}: for an `afterEach`, so a test that failed with a broker down
 * does not leave the next one a smaller cluster.
 */
export async function ensureAllBrokersUp(): Promise<void> {
  await kafkaSh(["up"]);
  await waitFor(`all ${CLUSTER_NODES} brokers to be listed in the cluster metadata`, async () =>
    (await liveBrokerIds()).length === CLUSTER_NODES ? true : undefined,
  );
}

/** The value of topic config `name` of `topic` as the brokers report it (DescribeConfigs), or undefined. */
export async function topicConfig(topic: string, name: string): Promise<string | undefined> {
  const result = await withAdmin((admin) =>
    // ConfigResourceTypes.TOPIC is 2 (the DescribeConfigs resource type of a topic).
    admin.describeConfigs({
      resources: [{ type: 2, name: topic, configNames: [name] }],
      includeSynonyms: false,
    }),
  );
  return result.resources[0]?.configEntries.find((e) => e.configName === name)?.configValue;
}

/**
 * Java's `String.hashCode` of `s` (UTF-16 code units, 32-bit overflow), as Kafka hashes a group id.
 */
function javaHashCode(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) | 0;
  return h;
}

/**
 * The partition of `__consumer_offsets` (of `partitions`) that holds group `groupId`:
 * `Utils.abs(groupId.hashCode) % partitions` (Kafka's `GroupCoordinator.partitionFor`; `Utils.abs`
 * maps Integer.MIN_VALUE to 0).
 */
export function offsetsPartitionOf(groupId: string, partitions: number): number {
  const hash = javaHashCode(groupId);
  return (hash === -2147483648 ? 0 : Math.abs(hash)) % partitions;
}

/**
 * The broker id of the group coordinator of `groupId`: the leader of its partition of
 * `__consumer_offsets` ({@link offsetsPartitionOf}). On a fresh cluster
 * the first lookup of a coordinator (a DescribeGroups here) creates `__consumer_offsets`.
 * @throws Error when that partition has no leader within 60 s.
 */
export async function groupCoordinator(groupId: string): Promise<number> {
  return waitFor(`the coordinator of group ${groupId}`, async () => {
    const admin = quietKafka().admin();
    await admin.connect();
    try {
      await admin.describeGroups([groupId]);
    } finally {
      await admin.disconnect();
    }
    const partitions = await topicState("__consumer_offsets");
    if (partitions.length === 0) return undefined;
    const partition = offsetsPartitionOf(groupId, partitions.length);
    const leader = partitions.find((p) => p.partition === partition)?.leader ?? -1;
    return leader >= 0 ? leader : undefined;
  });
}
