/**
 * The stack of one test against the secured broker (test/helpers/secureKafka.ts): the super user's
 * admin client, a migrated database, and a topic and group id of the test's own. The principal
 * under test has no ACL on them until the test grants it one (`grant` of secureKafka.ts), so each
 * test says exactly which ACLs its commands run with.
 */
import { onTestFinished } from "vitest";
import type { ClusterAdmin } from "../../src/kafka/admin.js";
import { produceRecords, type ProducerRecord } from "../../src/kafka/producer.js";
import { adminKafka, secureAdmin } from "./secureKafka.js";
import { createTestDatabase, uniqueName, type TestDatabase } from "./stack.js";

/** What {@link securedStack} gives a test. */
export interface SecuredStack {
  /** The super user `admin`'s admin client over SASL_SSL, closed when the test finishes. */
  readonly admin: ClusterAdmin;
  /** A database migrated with the example projections (`ledger`, …), dropped when the test finishes. */
  readonly db: TestDatabase;
  /** The test's topic, `<prefix>_…`, already created. */
  readonly topic: string;
  /** The test's consumer group id, `g_…` (nothing is created for it). */
  readonly group: string;
  /** Produces `records` to {@link topic} as the super user; how many were sent. */
  readonly produce: (records: readonly ProducerRecord[]) => Promise<number>;
}

/**
 * Makes one test's stack on the secured broker: the super user's admin client, a migrated database,
 * the topic `<prefix>_…` with `partitions` partitions and a group id, all of the test's own and
 * cleaned up when it finishes. Grants are the test's: nobody but `admin` may use them yet.
 *
 * @example
 * const { admin, db, topic, group, produce } = await securedStack("ops");
 * await produce(generateLedgerStream({ count: 5, duplicateRate: 0, seed: 3 }).records);
 * await grant("User:bob", [{ resource: "group", name: group, operations: ["DESCRIBE"] }]);
 */
export async function securedStack(prefix: string, partitions = 1): Promise<SecuredStack> {
  const admin = await secureAdmin();
  const db = await createTestDatabase();
  onTestFinished(() => db.drop());
  const topic = uniqueName(prefix);
  const group = uniqueName("g");
  await admin.createTopic(topic, partitions);
  const kafka = adminKafka();
  return { admin, db, topic, group, produce: (records) => produceRecords(kafka, topic, records) };
}
