import pg from "pg";
import { expect, it } from "vitest";
import { startPrivatePostgres } from "../../helpers/privatePostgres.js";
import { startPrivateKafka } from "../../helpers/privateKafka.js";
import { KafkaAdmin } from "../../../src/kafka/admin.js";
import { createKafka } from "../../../src/kafka/client.js";
import { createLogger } from "../../../src/logger.js";

it("private servers start, answer, stop and restart", async () => {
  const server = await startPrivatePostgres();
  try {
    const c = new pg.Client({ connectionString: server.url });
    await c.connect();
    expect((await c.query("SELECT 1 AS one")).rows[0]).toEqual({ one: 1 });
    await c.end();
    server.restart();
  } finally {
    server.destroy();
  }
  const kafka = await startPrivateKafka();
  try {
    const admin = await KafkaAdmin.connect(
      createKafka({ brokers: [kafka.brokers], clientId: "t", log: createLogger("error") }),
    );
    expect(await admin.createTopic("x", 1)).toBe(true);
    await admin.close();
  } finally {
    kafka.destroy();
  }
});
