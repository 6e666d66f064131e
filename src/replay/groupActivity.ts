/**
 * Whether a consumer group may have its offsets reset: only while it is inactive, as Kafka's
 * `kafka-consumer-groups --reset-offsets` requires ("Assignments can only be reset if the group
 * is inactive"): state Empty or Dead, no members. A running member would keep fetching from its
 * own positions and overwrite the reset with its next commit.
 */
import type { GroupMember } from "../kafka/admin.js";

/** Group states in which a reset is allowed (Kafka's ConsumerGroupCommand). */
const INACTIVE_STATES = new Set(["Empty", "Dead"]);

/**
 * The refusal message when the group is active, naming each member (memberId, clientId, host)
 * and what to do; undefined when the group is inactive.
 * @param what the operation refused, e.g. "reset its offsets".
 */
export function groupActiveMessage(
  groupId: string,
  state: string,
  members: readonly GroupMember[],
  what: string,
): string | undefined {
  if (members.length === 0 && INACTIVE_STATES.has(state)) return undefined;
  const listed = members.map(
    (m) => `  memberId=${m.memberId} clientId=${m.clientId} host=${m.clientHost.replace(/^\//, "")}`,
  );
  const count = members.length === 1 ? "1 active member" : `${members.length} active members`;
  return [
    `consumer group ${groupId} is ${state} with ${count}; cannot ${what} while the group is active (Kafka allows it only when the group is Empty).`,
    ...listed,
    `Stop every member first (SIGTERM each \`replayable run\` of this group and wait for it to exit; a member killed without leaving stays until its session times out), then run the command without --execute to list the members left, and with --execute once none is.`,
  ].join("\n");
}
