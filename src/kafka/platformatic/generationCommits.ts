/**
 * OffsetCommit requests with the ids of one group join, over @platformatic/kafka. The library's
 * own `Consumer#commit` fills in the consumer's current generation id and member id and, on
 * ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID or REBALANCE_IN_PROGRESS, rejoins the group and sends the
 * same offsets again in the new generation
 * (node_modules/@platformatic/kafka/dist/clients/consumer/consumer.js, `#commit`): a commit of a
 * batch fetched in generation N could so land in N+1 after the partition moved, which breaks the
 * commit fence (docs/design.md "A feed adapter's guarantees", 4). This sends one request with
 * exactly the ids given, to the group coordinator, and never rejoins; src/kafka/offsetCommits.ts
 * orders and retries them as it does for KafkaJS.
 */
import type { Consumer } from "@platformatic/kafka";
import type { PlatformaticKafka } from "./loadClient.js";

/** Coordinator answers that mean the generation is over: src/kafka/offsetCommits.ts skips the commit. */
const REBALANCE_ERRORS = [
  "REBALANCE_IN_PROGRESS",
  "ILLEGAL_GENERATION",
  "UNKNOWN_MEMBER_ID",
  // KIP-848: the member epoch is over (the member was fenced).
  "FENCED_MEMBER_EPOCH",
] as const;

/** What src/kafka/offsetCommits.ts calls: the shape of KafkaJS patch 006's `commitOffsetsOfGeneration`. */
export interface GenerationCommitter {
  commitOffsetsOfGeneration(request: {
    generationId: number;
    memberId: string;
    topics: { topic: string; partitions: { partition: number; offset: string }[] }[];
  }): Promise<void>;
}

/**
 * A failed commit as src/kafka/offsetCommits.ts reads it: `type` the protocol error when the
 * generation is over, `retriable` false when no retry can help (an ACL, a refused argument).
 */
export class CommitError extends Error {
  constructor(
    message: string,
    readonly type: string | undefined,
    readonly retriable: boolean,
    cause: unknown,
  ) {
    super(message, { cause });
    this.name = "CommitError";
  }
}

/** Calls a callback-style function of the library as a promise. */
function call<T>(fn: (callback: (error: Error | null | undefined, result?: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => {
    fn((error, result) => (error ? reject(error) : resolve(result as T)));
  });
}

/** One of the library's protocol APIs at the version it chose for the broker. */
export type GroupApi = { version: number; async: (...args: unknown[]) => Promise<unknown> };

/**
 * The consumer's connection to its group coordinator (found by the library, its address from the
 * metadata of `topics`) and the library's implementation of API `name` for it: what a group request
 * the library does not send as replayable needs it is sent over.
 * @throws the client's error when no coordinator or connection is found, or the API is unsupported.
 */
export async function groupCoordinatorApi(
  lib: PlatformaticKafka,
  consumer: Consumer,
  name: string,
  topics: readonly string[],
): Promise<{ connection: Parameters<Parameters<Consumer[typeof lib.kGetConnection]>[1]>[1]; api: GroupApi }> {
  const coordinatorId = await consumer.findGroupCoordinator();
  const metadata = await consumer.metadata({ topics: [...topics] });
  const broker = metadata.brokers.get(coordinatorId);
  if (broker === undefined) throw new Error(`the group coordinator ${coordinatorId} is not in the metadata`);
  const connection = await call<Parameters<Parameters<Consumer[typeof lib.kGetConnection]>[1]>[1]>((cb) =>
    consumer[lib.kGetConnection](broker, cb),
  );
  const api = await call<GroupApi>((cb) =>
    consumer[lib.kGetApi](name, cb as Parameters<Consumer[typeof lib.kGetApi]>[1]),
  );
  return { connection, api };
}

/**
 * Sends offset commits for `consumer`'s group with the generation id and member id given, over
 * the consumer's connection to the group coordinator (found by the library; its cache is dropped
 * when the library's own group requests meet NOT_COORDINATOR). The OffsetCommit version is the
 * highest both the broker and the library speak.
 * @throws CommitError on any failure (see {@link CommitError}).
 */
export function generationCommitter(lib: PlatformaticKafka, consumer: Consumer): GenerationCommitter {
  return {
    async commitOffsetsOfGeneration({ generationId, memberId, topics }) {
      try {
        const { connection, api } = await groupCoordinatorApi(
          lib,
          consumer,
          "OffsetCommit",
          topics.map((t) => t.topic),
        );
        await api.async(
          connection,
          consumer.groupId,
          generationId,
          memberId,
          null,
          topics.map(({ topic, partitions }) => ({
            name: topic,
            partitions: partitions.map(({ partition, offset }) => ({
              partitionIndex: partition,
              committedOffset: BigInt(offset),
              committedLeaderEpoch: -1,
              committedMetadata: null,
            })),
          })),
        );
      } catch (error) {
        const type = REBALANCE_ERRORS.find((code) => lib.findErrorBy(error as Error, "apiId", code) !== null);
        // KIP-848's STALE_MEMBER_EPOCH: the epoch moved on (the library marks it not retriable);
        // a retry carries the new epoch when the assignment stayed (src/kafka/offsetCommits.ts).
        const stale = lib.findErrorBy(error as Error, "apiId", "STALE_MEMBER_EPOCH") !== null;
        const retriable =
          type !== undefined || stale || lib.findErrorBy(error as Error, "canRetry", false) === null;
        throw new CommitError(`offset commit failed: ${(error as Error).message}`, type, retriable, error);
      }
    },
  };
}

/** A group's committed offsets by topic, indexed by partition (-1n: none), as `Consumer#listCommittedOffsets` gives them. */
export type CommittedOffsets = Map<string, bigint[]>;

/**
 * The group's committed offsets of `topics`, read with an OffsetFetch that names no member (member
 * id null, epoch -1), as Java's classic consumer and the admin client send it. The library's
 * `Consumer#listCommittedOffsets` sends a classic member's member id with epoch -1, which a
 * consumer group (KIP-848) holding classic members during a switch of protocol refuses with
 * ILLEGAL_GENERATION (the broker takes the -1 for that member's generation); without a member the
 * broker checks nothing and answers with the committed offsets.
 * @throws the client's error (ResponseError for a refused group or partition).
 */
export async function committedOffsetsWithoutMember(
  lib: PlatformaticKafka,
  consumer: Consumer,
  topics: readonly { topic: string; partitions: readonly number[] }[],
): Promise<CommittedOffsets> {
  const { connection, api } = await groupCoordinatorApi(
    lib,
    consumer,
    "OffsetFetch",
    topics.map((t) => t.topic),
  );
  const requested = topics.map(({ topic, partitions }) => ({
    name: topic,
    partitionIndexes: [...partitions],
  }));
  type ResponseTopic = { name: string; partitions: { partitionIndex: number; committedOffset: bigint }[] };
  // The library takes the groups form at every version; answers before v8 (KIP-709) hold one group's topics.
  const response = await api.async(
    connection,
    [{ groupId: consumer.groupId, memberId: null, memberEpoch: -1, topics: requested }],
    false,
  );
  const answered =
    api.version >= 8
      ? (response as { groups: { topics: ResponseTopic[] }[] }).groups.flatMap((g) => g.topics)
      : (response as { topics: ResponseTopic[] }).topics;
  const committed: CommittedOffsets = new Map();
  for (const { name, partitions } of answered) {
    const offsets = committed.get(name) ?? [];
    for (const { partitionIndex, committedOffset } of partitions) offsets[partitionIndex] = committedOffset;
    committed.set(name, offsets);
  }
  return committed;
}
