/**
 * The read-only commands need only Describe (and rebuild's dry run DescribeConfigs), as
 * docs/security.md lists: an operator principal with just those ACLs runs status, prune and the
 * dry runs of replay and rebuild; `replay --execute` with them is refused naming Read on the group.
 * promote and rollback read both versions' groups: each is checked for Describe before anything
 * changes.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { migrate } from "../../src/db/migrate.js";
import { generateLedgerStream } from "../../src/projections/ledger/generate.js";
import { insertVersion, selectVersions } from "../../src/sql/projectionVersions.js";
import { createVersionSchema } from "../../src/versions/createVersion.js";
import { runCli } from "../helpers/process.js";
import { SASL_BROKERS, grant, saslEnv } from "../helpers/secureKafka.js";
import { securedStack } from "../helpers/securedStack.js";
import { uniqueName } from "../helpers/stack.js";
import { tempFolder, writeVersionedConfig } from "../helpers/versionedConfig.js";

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

  it("promote and rollback check Describe on both versions' groups before they change anything", async () => {
    const { db, topic } = await securedStack("aclbg");
    const dir = tempFolder();
    const name = uniqueName("aclbg");
    writeVersionedConfig(dir, name, topic);
    const migrationsFolder = join(dir, "migrations");
    await migrate(db.pool, [{ name, migrationsFolder, versioned: true }]);
    const client = await db.pool.connect();
    try {
      await createVersionSchema(client, name, 2, migrationsFolder);
      await insertVersion(client, {
        projection: name,
        version: 2,
        schemaName: `${name}_v2`,
        groupId: `${name}-v2`,
        state: "shadow",
      });
    } finally {
      client.release();
    }
    const states = async () =>
      (await selectVersions(db.pool, name)).map((r) => [r.version, r.state, r.groupId]);
    const before = await states();
    expect(before).toEqual([
      [1, "live", `${name}-v1`],
      [2, "shadow", `${name}-v2`],
    ]);
    const refusal = (user: string, group: string) =>
      `Kafka refused Describe on group '${group}' (GROUP_AUTHORIZATION_FAILED) for User:${user}: grant it with kafka-acls --bootstrap-server ${SASL_BROKERS} --add --allow-principal User:${user} --operation Describe --group ${group}`;
    const cli = (user: string, args: string[]) =>
      runCli(args, { ...saslEnv(user), DATABASE_URL: db.url }, { cwd: dir });

    // bob may Describe the topic and the shadow's group, not the live version's.
    await grant("User:bob", [
      { resource: "topic", name: topic, operations: ["DESCRIBE"] },
      { resource: "group", name: `${name}-v2`, operations: ["DESCRIBE"] },
    ]);
    const promote = ["promote", "--projection", name, "--version", "2"];
    const refused = await cli("bob", promote);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(refusal("bob", `${name}-v1`));
    // Refused by the start-up check, before the command's own client logs Kafka's error.
    expect(refused.stderr).not.toContain('"level":50');
    expect(await states()).toEqual(before);

    await grant("User:bob", [{ resource: "group", name: `${name}-v1`, operations: ["DESCRIBE"] }]);
    const promoted = await cli("bob", promote);
    expect(promoted.code, promoted.stderr).toBe(0);
    const after = await states();
    expect(after).toEqual([
      [1, "retired", `${name}-v1`],
      [2, "live", `${name}-v2`],
    ]);

    // alice may Describe the live version's group (now v2), not the retired one rollback restores.
    await grant("User:alice", [{ resource: "group", name: `${name}-v2`, operations: ["DESCRIBE"] }]);
    const rollback = ["rollback", "--projection", name];
    const rollbackRefused = await cli("alice", rollback);
    expect(rollbackRefused.code, rollbackRefused.stderr).toBe(2);
    expect(rollbackRefused.stderr).toContain(refusal("alice", `${name}-v1`));
    expect(await states()).toEqual(after);
    const rolledBack = await cli("bob", rollback);
    expect(rolledBack.code, rolledBack.stderr).toBe(0);
    expect(await states()).toEqual([
      [1, "live", `${name}-v1`],
      [2, "shadow", `${name}-v2`],
    ]);
  });
});
