/**
 * Membership of a consumer group under the consumer rebalance protocol of KIP-848
 * (KAFKA_GROUP_PROTOCOL=consumer), over @platformatic/kafka's ConsumerGroupHeartbeat API. The
 * library joins such a group only from `Consumer#consume`, which starts its own fetch stream
 * (node_modules/@platformatic/kafka/dist/clients/consumer/consumer.js, `#performConsume` and
 * `#joinGroupConsumerProtocol`), so the feed runs the heartbeat loop itself: the broker computes
 * the assignment, each heartbeat answers the member epoch and, when it changed, the member's whole
 * target assignment; the member takes it at once (the feed starts a new generation) and reports
 * what it owns in the next heartbeat, which the broker needs to move partitions on (KIP-848
 * "Rebalance protocol"). A fenced member (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID) joins again
 * with epoch 0; leaving sends epoch -1.
 */
import { randomUUID } from "node:crypto";
import type { Consumer } from "@platformatic/kafka";
import type { Logger } from "pino";
import { backoffDelayMs } from "../../support/backoff.js";
import { failpoint } from "../../support/failpoints.js";
import { sendToGroupCoordinator } from "./groupCoordinator.js";
import type { PlatformaticKafka } from "./loadClient.js";

/** A member's assignment: topic name → partitions. */
export type TopicAssignment = { topic: string; partitions: number[] }[];

/** What the member tells its owner. */
export interface ConsumerGroupMemberEvents {
  /** A new assignment (or the first): the member epoch, the member id and the whole assignment. */
  assigned(memberEpoch: number, memberId: string, assignment: TopicAssignment): void;
  /** The member epoch moved on while the assignment stayed: commits go with the new epoch. */
  epochChanged(memberEpoch: number, memberId: string): void;
  /** The member was fenced or lost its membership: it owns nothing until the next `assigned`. */
  lost(error: unknown): void;
  /** A failure no retry can fix (an ACL, an unsupported broker). */
  failed(error: unknown): void;
}

/** Options of {@link ConsumerGroupMember}. */
export interface ConsumerGroupMemberOptions {
  readonly lib: PlatformaticKafka;
  readonly consumer: Consumer;
  readonly groupId: string;
  readonly topics: readonly string[];
  /** How long the broker waits for the member to give up revoked partitions, ms (KIP-848 `rebalance.timeout.ms`). */
  readonly rebalanceTimeoutMs: number;
  readonly log: Logger;
  readonly events: ConsumerGroupMemberEvents;
}

/**
 * Heartbeat errors that end the membership: join again with epoch 0. GROUP_ID_NOT_FOUND: the group
 * is gone, or is a classic group again (Kafka converts a consumer group whose last consumer-protocol
 * member was removed back to classic when classic members remain, KIP-848's online migration), so
 * the member's epoch means nothing; retried, it kept a fenced member fetching forever.
 */
const FENCED = ["FENCED_MEMBER_EPOCH", "UNKNOWN_MEMBER_ID", "GROUP_ID_NOT_FOUND"];
/** Heartbeat errors no retry can fix. */
const FATAL = [
  "GROUP_AUTHORIZATION_FAILED",
  "UNSUPPORTED_VERSION",
  "UNSUPPORTED_ASSIGNOR",
  "INVALID_REQUEST",
  "GROUP_MAX_SIZE_REACHED",
];

type HeartbeatResponse = {
  memberId: string | null;
  memberEpoch: number;
  heartbeatIntervalMs: number;
  assignment: { topicPartitions: { topicId: string; partitions: number[] }[] } | null;
};

/** A canonical text of an assignment by topic id, to compare two. */
function keyOf(topicPartitions: readonly { topicId: string; partitions: readonly number[] }[]): string {
  return topicPartitions
    .map((t) => `${t.topicId}:${[...t.partitions].sort((a, b) => a - b).join(",")}`)
    .sort()
    .join(";");
}

/** One member of a KIP-848 consumer group. `start()` and `leave()` are idempotent. */
export class ConsumerGroupMember {
  /** Client-generated, as ConsumerGroupHeartbeat v1 wants (KIP-1082). */
  private readonly memberId = randomUUID();
  private memberEpoch = 0;
  /** What the member owns, by topic id (sent in each heartbeat). */
  private owned: { topicId: string; partitions: number[] }[] = [];
  /** {@link keyOf} the owned partitions; undefined before the first assignment and after a fencing. */
  private ownedKey: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private intervalMs = 1000;
  private failures = 0;
  private stopped = false;
  private inFlight: Promise<void> | undefined;

  constructor(private readonly options: ConsumerGroupMemberOptions) {}

  /** Joins (the first heartbeat, epoch 0) and keeps heartbeating until {@link leave}. */
  start(): void {
    this.schedule(0);
  }

  /** Stops heartbeating and leaves the group (a heartbeat with epoch -1); errors are logged. */
  async leave(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.timer);
    await this.inFlight;
    if (this.memberEpoch <= 0) return;
    try {
      await this.send(-1, []);
    } catch (error) {
      this.options.log.warn({ err: error }, "leaving the consumer group failed");
    }
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.inFlight = this.heartbeat().finally(() => (this.inFlight = undefined));
    }, delayMs);
  }

  /** One ConsumerGroupHeartbeat to the group coordinator. */
  private async send(
    memberEpoch: number,
    owned: { topicId: string; partitions: number[] }[],
  ): Promise<HeartbeatResponse> {
    const { lib, consumer } = this.options;
    return (await sendToGroupCoordinator(
      lib,
      consumer,
      "ConsumerGroupHeartbeat",
      this.options.topics,
      (api, connection) =>
        api.async(
          connection,
          this.options.groupId,
          this.memberId,
          memberEpoch,
          null,
          null,
          this.options.rebalanceTimeoutMs,
          [...this.options.topics],
          null,
          null,
          owned,
        ),
    )) as HeartbeatResponse;
  }

  private async heartbeat(): Promise<void> {
    const { lib, events, log } = this.options;
    try {
      const response = await this.send(this.memberEpoch, this.owned);
      await failpoint("group-heartbeat-answered");
      // The epoch first, even when a stop began meanwhile: leave() sends its leave heartbeat only
      // for a member that joined, and this answer may be the one that made it a member.
      const previousEpoch = this.memberEpoch;
      this.memberEpoch = response.memberEpoch;
      if (this.stopped) return;
      this.failures = 0;
      if (response.heartbeatIntervalMs > 0) this.intervalMs = response.heartbeatIntervalMs;
      // The broker repeats the whole assignment in its answer to every full heartbeat (this one
      // sends its subscription and owned partitions each time): only a different one is new.
      const target = response.assignment?.topicPartitions;
      const assignmentKey = target === undefined ? undefined : keyOf(target);
      if (target !== undefined && assignmentKey !== undefined && assignmentKey !== this.ownedKey) {
        await this.take(target, assignmentKey);
        // Report the partitions taken at once: the broker moves others only once they are released.
        this.schedule(0);
        return;
      }
      if (this.memberEpoch !== previousEpoch && previousEpoch > 0)
        events.epochChanged(this.memberEpoch, this.memberId);
      this.schedule(this.intervalMs);
    } catch (error) {
      if (this.stopped) return;
      const id = (code: string) => lib.findErrorBy(error as Error, "apiId", code) !== null;
      if (FATAL.some(id)) {
        events.failed(error);
        return;
      }
      if (FENCED.some(id)) {
        this.rejoin(error);
        return;
      }
      const delayMs = Math.min(this.intervalMs, backoffDelayMs(this.failures++, 500, 5000));
      log.warn({ err: error, retryInMs: delayMs }, "consumer group heartbeat failed; retrying");
      this.schedule(delayMs);
    }
  }

  /**
   * Takes the whole target assignment at once (reported as owned in the next heartbeat). Taken
   * only once the metadata names every topic id: a failure here retries the heartbeat, whose
   * answer repeats the assignment, and it must still count as new then.
   * @throws Error when the metadata cannot be read or does not (yet) name a topic id.
   */
  private async take(
    topicPartitions: readonly { topicId: string; partitions: number[] }[],
    key: string,
  ): Promise<void> {
    const { consumer, events } = this.options;
    await failpoint("group-assignment-metadata");
    const metadata = await consumer.metadata({ topics: [...this.options.topics], forceUpdate: true });
    const names = new Map([...metadata.topics].map(([name, t]) => [t.id, name]));
    const assignment: TopicAssignment = [];
    for (const { topicId, partitions } of topicPartitions) {
      const topic = names.get(topicId);
      if (topic === undefined)
        throw new Error(`the assignment names topic id ${topicId}, which the metadata does not (yet) name`);
      assignment.push({ topic, partitions: [...partitions] });
    }
    this.ownedKey = key;
    this.owned = topicPartitions.map((t) => ({ topicId: t.topicId, partitions: [...t.partitions] }));
    events.assigned(this.memberEpoch, this.memberId, assignment);
  }

  /** The membership ended (fenced, removed, the group gone): own nothing, join again with epoch 0. */
  private rejoin(error: unknown): void {
    const { events, log } = this.options;
    // A member that had joined joins again at once; one refused while joining (epoch 0: a
    // classic group the broker will not convert) backs off, as any other failure.
    const joined = this.memberEpoch > 0;
    const delayMs = joined ? 0 : backoffDelayMs(this.failures++, 500, 5000);
    log.warn(
      { err: error, memberEpoch: this.memberEpoch, retryInMs: delayMs },
      "fenced from the consumer group; joining again",
    );
    this.memberEpoch = 0;
    this.owned = [];
    this.ownedKey = undefined;
    events.lost(error);
    this.schedule(delayMs);
  }
}
