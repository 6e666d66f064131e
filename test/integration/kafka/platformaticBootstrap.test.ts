/**
 * Regression (issue 25's fault suite, `brokerSilent` on KAFKA_CLIENT=platformatic with KIP-848
 * groups: the group stayed behind for over two minutes with one broker silent). @platformatic/kafka
 * 2.12.1 sends each metadata lookup to the first bootstrap broker first (`kGetBootstrapConnection`
 * rotates only on the retries of one lookup). With that broker silent (half-open), every metadata
 * refresh waited a request timeout there before trying the next broker, and every fetch of the
 * member, on every broker, waits for the refresh it shares (the library's fetch reads the metadata
 * first): all partitions stalled for a request timeout at each refresh. The patch
 * (patches/README.md, "@platformatic+kafka+2.12.1+001+failed-broker-last.patch") makes the connection pool try a broker
 * whose connection failed or whose request timed out after the others for a while, as the Java
 * client's `NetworkClient.leastLoadedNode` skips nodes in reconnect backoff.
 *
 * A real broker, once directly and once behind a silent fault proxy listed first; 1 s request
 * timeout, no retries, so one lookup tries one broker.
 */
import { afterEach, expect, it } from "vitest";
import { loadPlatformaticKafka } from "../../../src/kafka/platformatic/loadClient.js";
import { FaultProxy } from "../../helpers/faultProxy.js";
import { BROKERS } from "../../helpers/stack.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it("a bootstrap broker whose request timed out is tried after the others by the next metadata lookup", async () => {
  const broker = BROKERS[0] ?? "127.0.0.1:9092";
  const [host = "127.0.0.1", port] = broker.split(":");
  const silent = await FaultProxy.start({ target: { host, port: Number(port) }, name: "silent-broker" });
  cleanups.push(() => silent.close());
  silent.setMode("silent");

  const lib = await loadPlatformaticKafka();
  const admin = new lib.Admin({
    clientId: "platformatic-bootstrap-test",
    bootstrapBrokers: [`127.0.0.1:${silent.port}`, broker],
    requestTimeout: 1000,
    retries: 0,
  });
  cleanups.push(() => admin.close());

  // The first lookup goes to the first bootstrap broker, the silent one, and times out.
  await expect(admin.metadata({ topics: [] })).rejects.toThrow(/timed out/i);
  expect(silent.connections()).toHaveLength(1);

  // Without the patch this lookup went to the silent broker again and timed out as well.
  const metadata = await admin.metadata({ topics: [], forceUpdate: true });
  expect(metadata.brokers.size).toBeGreaterThan(0);
  expect(silent.connections()).toHaveLength(1);
});
