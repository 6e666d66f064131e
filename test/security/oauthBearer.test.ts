/**
 * KAFKA_SASL_MECHANISM=OAUTHBEARER with a token provider: from the config file's
 * `kafkaOauthBearerProvider` (the CLI) and from `ConsumerService`'s `oauthBearerProvider` (a
 * library user). The secured broker takes Kafka's unsecured tokens (an unsigned JWT whose `sub` is
 * the principal), which is enough to prove the token reaches the broker and names the principal.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { loadConfig } from "../../src/config.js";
import { ConsumerService } from "../../src/engine/consumerService.js";
import { ReplayableError } from "../../src/errors.js";
import { createLogger } from "../../src/logger.js";
import { ledgerProjection } from "../../src/projections/ledger/ledgerProjection.js";
import { generateLedgerStream } from "../../src/projections/ledger/generate.js";
import { ledgerChecksumOf } from "../helpers/ledger.js";
import { runCli } from "../helpers/process.js";
import { SASL_BROKERS, caPath, grant } from "../helpers/secureKafka.js";
import { securedStack } from "../helpers/securedStack.js";
import { uniqueName, waitForCaughtUp } from "../helpers/stack.js";

/** An unsecured OAUTHBEARER token (`alg: none`) for `sub`, valid for an hour. */
function unsecuredToken(sub: string): string {
  const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
  const now = Math.floor(Date.now() / 1000);
  return `${b64({ alg: "none" })}.${b64({ sub, iat: now, exp: now + 3600 })}.`;
}

const env = {
  KAFKA_BROKERS: SASL_BROKERS,
  KAFKA_SECURITY_PROTOCOL: "SASL_SSL",
  KAFKA_SASL_MECHANISM: "OAUTHBEARER",
};

describe("OAUTHBEARER", () => {
  it("the CLI takes the token provider from the config file; without one it is a config error", async () => {
    const { db, topic, group } = await securedStack("oauth");
    const sub = uniqueName("oauth");
    await grant(`User:${sub}`, [
      { resource: "topic", name: topic, operations: ["DESCRIBE"] },
      { resource: "group", name: group, operations: ["DESCRIBE"] },
    ]);
    const dir = mkdtempSync(join(tmpdir(), "replayable-oauth-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const configFile = join(dir, "replayable.config.mjs");
    writeFileSync(
      configFile,
      `export default { kafkaOauthBearerProvider: async () => ({ value: ${JSON.stringify(unsecuredToken(sub))} }) };\n`,
    );
    const args = ["status", "--projection", "ledger", "--group", group, "--topic", topic];
    const cliEnv = { ...env, KAFKA_SSL_CA_LOCATION: caPath(), DATABASE_URL: db.url };
    const status = await runCli([...args, "--config", configFile], cliEnv);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(`group ${group}, projection ledger`);

    const without = await runCli(args, cliEnv);
    expect(without.code).toBe(2);
    expect(without.stderr).toContain(
      "KAFKA_SASL_MECHANISM=OAUTHBEARER: needs a token provider: export kafkaOauthBearerProvider from the config file",
    );
  });

  it("a library user passes the token provider to ConsumerService", async () => {
    const { admin, db, topic, group, produce } = await securedStack("oauth-lib");
    const sub = uniqueName("oauth-lib");
    await grant(`User:${sub}`, [
      { resource: "topic", name: topic, operations: ["READ"] },
      { resource: "group", name: group, operations: ["READ"] },
    ]);
    const stream = generateLedgerStream({ count: 20, duplicateRate: 0.1, seed: 5 });
    await produce(stream.records);
    let tokens = 0;
    const service = new ConsumerService({
      config: loadConfig({
        ...env,
        KAFKA_SSL_CA_LOCATION: caPath(),
        DATABASE_URL: db.url,
        REPLAYABLE_TOPICS: topic,
        REPLAYABLE_GROUP_ID: group,
      }),
      projection: ledgerProjection,
      log: createLogger("silent"),
      http: false,
      oauthBearerProvider: () => {
        tokens += 1;
        return Promise.resolve({ value: unsecuredToken(sub) });
      },
    });
    onTestFinished(() => service.stop());
    await service.start();
    await waitForCaughtUp(admin, group, topic);
    expect(await ledgerChecksumOf(db.pool)).toBe(stream.checksum);
    expect(tokens).toBeGreaterThan(0);
  });

  it("a library user's member whose principal may not Read its group fails at start with the ACL named, instead of looping", async () => {
    const { db, topic, group } = await securedStack("oauth-noacl");
    const sub = uniqueName("oauth-noacl");
    await grant(`User:${sub}`, [{ resource: "topic", name: topic, operations: ["READ"] }]);
    const service = new ConsumerService({
      config: loadConfig({
        ...env,
        KAFKA_SSL_CA_LOCATION: caPath(),
        DATABASE_URL: db.url,
        REPLAYABLE_TOPICS: topic,
        REPLAYABLE_GROUP_ID: group,
      }),
      projection: ledgerProjection,
      log: createLogger("silent"),
      http: false,
      oauthBearerProvider: () => Promise.resolve({ value: unsecuredToken(sub) }),
    });
    onTestFinished(() => service.stop());
    const refused = await service.start().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(ReplayableError);
    expect((refused as ReplayableError).code).toBe("KAFKA_AUTHORIZATION");
    expect((refused as Error).message).toContain(`Read on group '${group}'`);
  });
});
