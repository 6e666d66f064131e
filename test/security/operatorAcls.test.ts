/**
 * The read-only commands need only Describe (and rebuild's dry run DescribeConfigs), as
 * docs/security.md lists: an operator principal with just those ACLs runs status, prune and the
 * dry runs of replay and rebuild; `replay --execute` with them is refused naming Read on the group.
 */
import { describe, expect, it } from "vitest";
import { generateLedgerStream } from "../../src/projections/ledger/generate.js";
import { runCli } from "../helpers/process.js";
import { SASL_BROKERS, grant, saslEnv } from "../helpers/secureKafka.js";
import { securedStack } from "../helpers/securedStack.js";

describe("an operator principal with only Describe", () => {
  it("runs status, prune and the dry runs of replay and rebuild; replay --execute names Read on the group", async () => {
    const { db, topic, group, produce } = await securedStack("ops");
    await produce(generateLedgerStream({ count: 5, duplicateRate: 0, seed: 3 }).records);
    await grant("User:bob", [
      { resource: "topic", name: topic, operations: ["DESCRIBE", "DESCRIBE_CONFIGS"] },
      { resource: "group", name: group, operations: ["DESCRIBE"] },
    ]);
    const env = { ...saslEnv("bob"), DATABASE_URL: db.url };
    const common = ["--projection", "ledger", "--group", group, "--topic", topic];
    for (const args of [
      ["status", ...common],
      ["prune", ...common],
      ["rebuild", ...common],
      ["replay", ...common, "--to-earliest"],
    ]) {
      const result = await runCli(args, env);
      expect(result.code, `${args[0]}: ${result.stderr}`).toBe(0);
    }
    const execute = await runCli(["replay", ...common, "--to-earliest", "--execute"], env);
    expect(execute.code, execute.stderr).toBe(2);
    expect(execute.stderr).toContain(
      `Kafka refused Read on group '${group}' (GROUP_AUTHORIZATION_FAILED) for User:bob: grant it with kafka-acls --bootstrap-server ${SASL_BROKERS} --add --allow-principal User:bob --operation Read --group ${group}`,
    );
  });
});
