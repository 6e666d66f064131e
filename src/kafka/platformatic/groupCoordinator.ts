/**
 * The group coordinator of the group requests replayable sends itself over @platformatic/kafka
 * (KIP-848 heartbeats, offset commits of one generation, offset fetches without a member). The
 * library caches the coordinator it found (`Consumer#findGroupCoordinator`) and forgets it only
 * when one of its own requests fails (node_modules/@platformatic/kafka/dist/clients/consumer/
 * consumer.js, `#handleError`); under KIP-848 the library sends no group request, so after the
 * coordinator moved every heartbeat and commit went on to the old broker and met NOT_COORDINATOR
 * for good. This keeps its own coordinator per consumer and finds it again, as Java's
 * `AbstractCoordinator` marks it unknown, after NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
 * REQUEST_TIMED_OUT, a broken connection or a request timeout ({@link coordinatorLost}).
 */
import type { Consumer } from "@platformatic/kafka";
import type { PlatformaticKafka } from "./loadClient.js";

/** A connection of the library's pool. */
export type Connection = Parameters<Parameters<Consumer[PlatformaticKafka["kGetConnection"]]>[1]>[1];

/** One of the library's protocol APIs at the version it chose for the broker. */
export type GroupApi = { version: number; async: (...args: unknown[]) => Promise<unknown> };

/** Each consumer's group coordinator (its broker id) as found, or being found, by {@link findCoordinator}. */
const coordinators = new WeakMap<Consumer, Promise<number>>();

/** Calls a callback-style function of the library as a promise. */
function call<T>(fn: (callback: (error: Error | null | undefined, result?: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => {
    fn((error, result) => (error ? reject(error) : resolve(result as T)));
  });
}

/** The library's implementation of API `name` at the version it chose. */
function apiOf(lib: PlatformaticKafka, consumer: Consumer, name: string): Promise<GroupApi> {
  return call<GroupApi>((cb) =>
    consumer[lib.kGetApi](name, cb as Parameters<Consumer[typeof lib.kGetApi]>[1]),
  );
}

/**
 * Asks a bootstrap or known broker (the library's choice, healthy brokers first) for the
 * coordinator of the consumer's group (FindCoordinator, key type GROUP).
 * @throws the client's error: a ResponseError for COORDINATOR_NOT_AVAILABLE (the coordinator is
 *   loading or moving) or GROUP_AUTHORIZATION_FAILED, a NetworkError when no broker answers.
 */
async function findCoordinator(lib: PlatformaticKafka, consumer: Consumer): Promise<number> {
  const connection = await call<Connection>((cb) => consumer[lib.kGetBootstrapConnection](cb));
  const api = await apiOf(lib, consumer, "FindCoordinator");
  const response = (await api.async(connection, lib.FindCoordinatorKeyTypes.GROUP, [consumer.groupId])) as {
    coordinators: { key?: string; nodeId: number }[];
  };
  // Before v4 (KIP-699) the answer holds the one key asked, unnamed.
  const found = response.coordinators.find((c) => c.key === consumer.groupId) ?? response.coordinators[0];
  if (found === undefined || found.nodeId < 0)
    throw new Error(`FindCoordinator named no coordinator for group ${consumer.groupId}`);
  return found.nodeId;
}

/** The consumer's group coordinator: the one found before, or a new lookup (one at a time). */
function coordinatorOf(lib: PlatformaticKafka, consumer: Consumer): Promise<number> {
  let found = coordinators.get(consumer);
  if (found === undefined) {
    found = findCoordinator(lib, consumer);
    coordinators.set(consumer, found);
    const settled = found;
    settled.catch(() => {
      if (coordinators.get(consumer) === settled) coordinators.delete(consumer);
    });
  }
  return found;
}

/**
 * True for a failure after which the group coordinator must be found again: the broker no longer
 * coordinates the group (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE), the coordinator's own write
 * timed out (REQUEST_TIMED_OUT, which Java's OffsetCommit handler treats so: the broker may be
 * losing the group's partition), or the connection broke or a request timed out (the library's
 * NetworkError, code PLT_KFK_NETWORK; its TimeoutError carries that code too).
 * COORDINATOR_LOAD_IN_PROGRESS is the right coordinator, still loading: retried.
 */
export function coordinatorLost(lib: PlatformaticKafka, error: unknown): boolean {
  const e = error as Error;
  return (
    lib.findErrorBy(e, "apiId", "NOT_COORDINATOR") !== null ||
    lib.findErrorBy(e, "apiId", "COORDINATOR_NOT_AVAILABLE") !== null ||
    lib.findErrorBy(e, "apiId", "REQUEST_TIMED_OUT") !== null ||
    lib.findErrorBy(e, "code", "PLT_KFK_NETWORK") !== null
  );
}

/**
 * Sends one group request for `consumer`'s group to its coordinator: `send` gets the library's
 * implementation of API `name` and the connection to the coordinator (its address from the
 * metadata of `topics`, refreshed once when the coordinator is not in it). A failure that
 * {@link coordinatorLost} names makes the next request find the coordinator again.
 * @returns what `send` returns.
 * @throws the client's error or `send`'s, unchanged (callers read its error codes).
 */
export async function sendToGroupCoordinator<T>(
  lib: PlatformaticKafka,
  consumer: Consumer,
  name: string,
  topics: readonly string[],
  send: (api: GroupApi, connection: Connection) => Promise<T>,
): Promise<T> {
  const found = coordinatorOf(lib, consumer);
  try {
    const coordinatorId = await found;
    const broker =
      (await consumer.metadata({ topics: [...topics] })).brokers.get(coordinatorId) ??
      (await consumer.metadata({ topics: [...topics], forceUpdate: true })).brokers.get(coordinatorId);
    if (broker === undefined) {
      if (coordinators.get(consumer) === found) coordinators.delete(consumer);
      throw new Error(`the group coordinator ${coordinatorId} is not in the metadata`);
    }
    const connection = await call<Connection>((cb) => consumer[lib.kGetConnection](broker, cb));
    const api = await apiOf(lib, consumer, name);
    return await send(api, connection);
  } catch (error) {
    if (coordinatorLost(lib, error) && coordinators.get(consumer) === found) coordinators.delete(consumer);
    throw error;
  }
}
