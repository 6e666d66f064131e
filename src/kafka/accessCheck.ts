/**
 * The start-up check of the Kafka connection and ACLs, before a member joins its group or a
 * command changes anything: one connection without retries (a refused login or TLS handshake is
 * reported at once, never retried), then a metadata request per topic and an OffsetFetch of the
 * group. A failure that no retry fixes becomes an error naming what to set or which ACL to grant
 * ({@link kafkaSecurityFailure}); anything else (no broker answers yet) is left to the command's
 * own retries.
 */
import { connect as tcpConnect } from "node:net";
import { connect as tlsConnect } from "node:tls";
import kafkajs from "kafkajs";
import type { Logger } from "pino";
import { ReplayableError } from "../errors.js";
import type { OauthBearerProvider } from "./securityConfig.js";
import { createKafka } from "./client.js";
import { listenerSaslMechanisms } from "./saslProbe.js";
import {
  kafkaSecurityFailure,
  missingTopicOperation,
  plaintextListener,
  tlsListener,
  type FailureContext,
} from "./securityFailure.js";

/** What {@link checkKafkaAccess} checks, and the operations the command needs (for the messages). */
export interface AccessCheck extends FailureContext {
  readonly clientId: string;
  readonly log: Logger;
  readonly oauthBearerProvider?: OauthBearerProvider | undefined;
  /** A topic the command writes to (the DLQ topic), checked for Describe and Write (KIP-430). */
  readonly writeTopic?: string | undefined;
  /**
   * Groups besides `groupId` whose committed offsets the command reads (promote and rollback read
   * both versions' groups), checked for Describe.
   */
  readonly describedGroups?: readonly string[] | undefined;
  /**
   * A one-off command sets it: when the connection fails and no broker of the list accepts a TCP
   * connection, fail at once naming the brokers, instead of going on into the command's own
   * retries (a member leaves a broker that is starting to its retries).
   */
  readonly failWhenNoBrokerAnswers?: boolean | undefined;
}

/** How long the TLS probe of a listener waits, ms. */
const PROBE_TIMEOUT_MS = 3000;

/**
 * Connects once and reads what the command will read.
 * @throws ReplayableError KAFKA_AUTHENTICATION (login, TLS) or KAFKA_AUTHORIZATION (an ACL), or
 *   CONFIG_INVALID when OAUTHBEARER has no token provider.
 */
export async function checkKafkaAccess(check: AccessCheck): Promise<void> {
  const kafka = createKafka({
    brokers: check.brokers,
    clientId: check.clientId,
    log: check.log.child({}, { level: "silent" }),
    security: check.security,
    oauthBearerProvider: check.oauthBearerProvider,
    retries: 0,
  });
  const admin = kafka.admin();
  try {
    await admin.connect();
  } catch (error) {
    await admin.disconnect().catch(() => undefined);
    const failure = await connectFailure(error, check);
    if (failure !== undefined) throw failure;
    if (check.failWhenNoBrokerAnswers === true) {
      const unreachable = await noBrokerAnswers(check.brokers);
      if (unreachable !== undefined) throw unreachable;
    }
    check.log.debug({ err: error }, "Kafka access check could not connect; the command goes on");
    return;
  }
  try {
    // KafkaJS learns the brokers from a metadata response: without one (no topic to check) the
    // group coordinator lookup below fails with "No brokers in the broker pool" at retries 0.
    if ((check.topics?.length ?? 0) === 0) await admin.describeCluster();
    for (const topic of check.topics ?? []) await topicAccess(admin, topic, check);
    if (check.writeTopic !== undefined) await writeAccess(admin, check.writeTopic, check);
    if (check.topicOperations?.includes("DescribeConfigs") === true && (check.topics?.length ?? 0) > 0)
      await describeConfigs(admin, check);
    if (check.groupId !== undefined) {
      await admin
        .fetchOffsets({ groupId: check.groupId, topics: [...(check.topics ?? [])] })
        .catch(fail(check));
    }
    for (const groupId of check.describedGroups ?? []) {
      await admin
        .fetchOffsets({ groupId, topics: [...(check.topics ?? [])] })
        .catch(fail({ ...check, groupId, groupOperation: "Describe" }));
    }
  } catch (error) {
    if (error instanceof ReplayableError) throw error;
    check.log.debug({ err: error }, "Kafka access check incomplete; the command goes on");
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/**
 * Of `topics`, those whose metadata Kafka refuses to this principal (TOPIC_AUTHORIZATION_FAILED):
 * the cluster's topic list leaves out the topics a principal may not Describe, so such a topic
 * looks deleted. One connection without retries, one metadata request per topic; a topic that
 * does not exist (UNKNOWN_TOPIC_OR_PARTITION) or any other failure is left out.
 * @returns each refused topic with the KAFKA_AUTHORIZATION error naming the ACL to grant.
 */
export async function topicsRefusingDescribe(
  check: Pick<AccessCheck, "brokers" | "security" | "clientId" | "log" | "oauthBearerProvider">,
  topics: readonly string[],
): Promise<Map<string, ReplayableError>> {
  const refused = new Map<string, ReplayableError>();
  if (topics.length === 0) return refused;
  const kafka = createKafka({
    brokers: check.brokers,
    clientId: check.clientId,
    log: check.log.child({}, { level: "silent" }),
    security: check.security,
    oauthBearerProvider: check.oauthBearerProvider,
    retries: 0,
  });
  const admin = kafka.admin();
  try {
    await admin.connect();
    for (const topic of topics) {
      const failure = await admin.fetchTopicMetadata({ topics: [topic] }).then(
        () => undefined,
        (error: unknown) =>
          kafkaSecurityFailure(error, { ...check, topics: [topic], topicOperations: ["Describe"] }),
      );
      if (failure?.code === "KAFKA_AUTHORIZATION") refused.set(topic, failure);
    }
  } catch (error) {
    check.log.debug({ err: error }, "could not ask Kafka why topics are not listed");
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
  return refused;
}

// A CommonJS export Node's named-export detection misses: read it from the module object.
const { ConfigResourceTypes } = kafkajs;

type Admin = ReturnType<ReturnType<typeof createKafka>["admin"]>;

async function topicAccess(admin: Admin, topic: string, check: FailureContext): Promise<void> {
  await admin.fetchTopicMetadata({ topics: [topic] }).catch(fail({ ...check, topics: [topic] }));
}

/** ACL operation codes (Kafka's AclOperation, as KafkaJS's AclOperationTypes): bit n of a KIP-430 field. */
const WRITE_OPERATION = 4;
/** What Kafka puts in a KIP-430 field it was not asked for, or cannot fill. */
const OPERATIONS_OMITTED = -2147483648;

/**
 * `topic` may be described, and written to: its authorized operations (Metadata v8, KIP-430) hold
 * Write. A broker without Metadata v8 leaves Write to the first publish (logged at debug).
 * @throws ReplayableError KAFKA_AUTHORIZATION naming the ACL to grant.
 */
async function writeAccess(
  admin: Admin,
  topic: string,
  check: FailureContext & { log: Logger },
): Promise<void> {
  const context = { ...check, topics: [topic], topicOperations: ["Write"] as const };
  await topicAccess(admin, topic, context);
  const answer = await admin.fetchTopicAuthorizedOperations({ topics: [topic] }).catch((error: unknown) => {
    const failure = kafkaSecurityFailure(error, context);
    if (failure !== undefined) throw failure;
    check.log.debug(
      { err: error, topic },
      "Kafka did not tell the topic's authorized operations; Write is checked at the first publish",
    );
    return undefined;
  });
  const operations = answer?.topics.find((t) => t.name === topic)?.authorizedOperations;
  if (operations === undefined || operations === OPERATIONS_OMITTED) return;
  if ((operations & (1 << WRITE_OPERATION)) === 0) throw missingTopicOperation(topic, "Write", context);
}

async function describeConfigs(admin: Admin, check: FailureContext): Promise<void> {
  const resources = (check.topics ?? []).map((name) => ({ type: ConfigResourceTypes.TOPIC, name }));
  await admin.describeConfigs({ includeSynonyms: false, resources }).catch(fail(check));
}

/** Rethrows `error` as the security failure it is, else as it is. */
function fail(context: FailureContext): (error: unknown) => never {
  return (error: unknown) => {
    throw kafkaSecurityFailure(error, context) ?? error;
  };
}

/**
 * The error for a failed connect: a security failure, or (for a closed connection or a reset
 * during the handshake) a listener speaking TLS or not, against what is configured. Undefined
 * when the broker is just not there.
 */
async function connectFailure(error: unknown, check: AccessCheck): Promise<ReplayableError | undefined> {
  const known = kafkaSecurityFailure(error, check);
  if (known !== undefined) return known;
  const first = check.brokers[0];
  if (first === undefined) return undefined;
  const tls = await speaksTls(first);
  const configuredTls = check.security.ssl !== undefined;
  if (tls === true && !configuredTls)
    return new ReplayableError("KAFKA_AUTHENTICATION", tlsListener(check, await tlsSaslMechanisms(first)), {
      cause: error,
    });
  if (tls === false && configuredTls)
    return new ReplayableError("KAFKA_AUTHENTICATION", plaintextListener(check), { cause: error });
  return undefined;
}

/**
 * The SASL mechanisms the TLS listener `broker` asks for (`[]`: none), from one SaslHandshake over
 * TLS (certificate not verified: only the listener is probed); undefined when it does not tell.
 */
function tlsSaslMechanisms(broker: string): Promise<string[] | undefined> {
  const colon = broker.lastIndexOf(":");
  const socket = tlsConnect({
    host: broker.slice(0, colon),
    port: Number(broker.slice(colon + 1)),
    rejectUnauthorized: false,
  });
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(undefined);
    }, PROBE_TIMEOUT_MS);
    socket.once("secureConnect", () => {
      clearTimeout(timer);
      resolve(listenerSaslMechanisms(socket, PROBE_TIMEOUT_MS));
    });
    socket.once("error", () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(undefined);
    });
  });
}

/**
 * True when `broker` completes a TLS handshake (certificate not verified: only the protocol is
 * probed), false when it answers the handshake with a reset or garbage, undefined when it cannot
 * be reached.
 */
export function speaksTls(broker: string): Promise<boolean | undefined> {
  const colon = broker.lastIndexOf(":");
  const host = broker.slice(0, colon);
  const port = Number(broker.slice(colon + 1));
  return new Promise((resolve) => {
    let connected = false;
    const socket = tlsConnect({ host, port, rejectUnauthorized: false });
    const done = (result: boolean | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => done(connected ? false : undefined), PROBE_TIMEOUT_MS);
    socket.on("connect", () => (connected = true));
    socket.once("secureConnect", () => done(true));
    socket.once("error", (e: NodeJS.ErrnoException) =>
      done(
        e.code === "ECONNREFUSED" || e.code === "ENOTFOUND" || e.code === "EHOSTUNREACH"
          ? undefined
          : connected
            ? false
            : undefined,
      ),
    );
  });
}

/**
 * The error when not one of `brokers` accepts a TCP connection (refused, no such host, no answer
 * within {@link PROBE_TIMEOUT_MS}): KAFKA, naming each broker's failure and the setting; undefined
 * when one answers (the failure was something else) or the list is empty.
 */
export async function noBrokerAnswers(brokers: readonly string[]): Promise<ReplayableError | undefined> {
  if (brokers.length === 0) return undefined;
  const failures = await Promise.all(brokers.map(tcpFailure));
  if (failures.some((f) => f === undefined)) return undefined;
  return new ReplayableError(
    "KAFKA",
    `no Kafka broker answers at ${brokers.map((b, i) => `${b} (${failures[i]})`).join(", ")}, the brokers of KAFKA_BROKERS (or --brokers, or the config file's kafkaBrokers): start them, or correct the addresses`,
    { context: { variables: ["KAFKA_BROKERS"] } },
  );
}

/** Why `broker` (host:port) does not accept a TCP connection, or undefined when it does. */
function tcpFailure(broker: string): Promise<string | undefined> {
  const colon = broker.lastIndexOf(":");
  return new Promise((resolve) => {
    const socket = tcpConnect({ host: broker.slice(0, colon), port: Number(broker.slice(colon + 1)) });
    const done = (result: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => done(`no answer within ${PROBE_TIMEOUT_MS} ms`), PROBE_TIMEOUT_MS);
    socket.once("connect", () => done(undefined));
    socket.once("error", (e: NodeJS.ErrnoException) => done(e.code ?? e.message));
  });
}
