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
import { sendToGroupCoordinator } from "./groupCoordinator.js";
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

/**
 * Sends offset commits for `consumer`'s group with the generation id and member id given, over
 * the consumer's connection to the group coordinator (./groupCoordinator.ts finds it, and finds it
 * again after NOT_COORDINATOR or a broken connection). The OffsetCommit version is the
 * highest both the broker and the library speak.
 * @throws CommitError on any failure (see {@link CommitError}).
 */
export function generationCommitter(lib: PlatformaticKafka, consumer: Consumer): GenerationCommitter {
  return {
    async commitOffsetsOfGeneration({ generationId, memberId, topics }) {
      try {
        await sendToGroupCoordinator(
          lib,
          consumer,
          "OffsetCommit",
          topics.map((t) => t.topic),
          (api, connection) =>
            api.async(
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
            ),
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
  const requested = topics.map(({ topic, partitions }) => ({
    name: topic,
    partitionIndexes: [...partitions],
  }));
  type ResponseTopic = { name: string; partitions: { partitionIndex: number; committedOffset: bigint }[] };
  const answered = await sendToGroupCoordinator(
    lib,
    consumer,
    "OffsetFetch",
    topics.map((t) => t.topic),
    async (api, connection) => {
      // The library takes the groups form at every version; answers before v8 (KIP-709) hold one group's topics.
      const response = await api.async(
        connection,
        [{ groupId: consumer.groupId, memberId: null, memberEpoch: -1, topics: requested }],
        false,
      );
      return api.version >= 8
        ? (response as { groups: { topics: ResponseTopic[] }[] }).groups.flatMap((g) => g.topics)
        : (response as { topics: ResponseTopic[] }).topics;
    },
  );
  const committed: CommittedOffsets = new Map();
  for (const { name, partitions } of answered) {
    const offsets = committed.get(name) ?? [];
    for (const { partitionIndex, committedOffset } of partitions) offsets[partitionIndex] = committedOffset;
    committed.set(name, offsets);
  }
  return committed;
}
