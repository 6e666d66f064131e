/**
 * The SaslHandshake probe (src/kafka/saslProbe.ts) against a real broker: its PLAINTEXT listener
 * has no SASL and answers ILLEGAL_SASL_STATE, read as "no mechanisms". It shows the request is
 * one Kafka 4.1 reads; the SASL listener's answer (the mechanisms) is the unit test's.
 */
import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { listenerSaslMechanisms } from "../../../src/kafka/saslProbe.js";
import { BROKERS } from "../../helpers/stack.js";

describe("listenerSaslMechanisms", () => {
  it("reads no SASL mechanisms from a listener without SASL", async () => {
    const broker = BROKERS[0]!;
    const colon = broker.lastIndexOf(":");
    const socket = connect({ host: broker.slice(0, colon), port: Number(broker.slice(colon + 1)) });
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
    expect(await listenerSaslMechanisms(socket, 10_000)).toEqual([]);
    expect(socket.destroyed).toBe(true);
  });
});
