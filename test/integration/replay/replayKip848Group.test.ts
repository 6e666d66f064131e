/**
 * Regression (issue 30, found by a newcomer): a group of KIP-848's consumer protocol looked Dead
 * to the admin clients (DescribeGroups reports such a group so), so `replay --to-earliest` showed
 * no active member and `--execute` was refused only by the projection's advisory lock: a member
 * of the group on another database would not have been seen. PlatformaticAdmin now asks
 * ConsumerGroupDescribe; KafkaJS cannot (README, Limits).
 */
import { describe, expect, it } from "vitest";
import { KafkaAdmin } from "../../../src/kafka/admin.js";
import { eventIdCount, ledgerChecksumOf, produceLedger } from "../../helpers/ledger.js";
import { runCli, startCli } from "../../helpers/process.js";
import { committedOf, runArgs } from "../../helpers/replay.js";
import {
  testKafka,
  testPlatformaticAdmin,
  uniqueName,
  useStack,
  waitForCaughtUp,
} from "../../helpers/stack.js";

const stack = useStack();

/** The member's and the commands' client: @platformatic/kafka in a KIP-848 group. */
const KIP848 = { KAFKA_CLIENT: "platformatic", KAFKA_GROUP_PROTOCOL: "consumer" };

describe("a consumer group of KIP-848's protocol", () => {
  it("replay and rebuild --execute are refused naming its member (KAFKA_CLIENT=platformatic); nothing changes", async () => {
    const topic = uniqueName("replay-848");
    const group = uniqueName("g");
    const stream = await produceLedger(stack.admin, topic, { count: 20, partitions: 2, seed: 43 });
    const member = startCli(runArgs(stack.db.url, topic, group), KIP848);
    const replay = ["replay", "--group", group, "--projection", "ledger", "--topic", topic];
    const env = { ...KIP848, DATABASE_URL: stack.db.url };
    try {
      await waitForCaughtUp(stack.admin, group, topic);
      const before = await committedOf(stack.admin, group, topic);

      const platformatic = await testPlatformaticAdmin();
      try {
        const described = await platformatic.describeGroup(group);
        expect(described.state).toBe("Stable");
        expect(described.members.map((m) => m.clientId)).toEqual(["replayable"]);
        await expect(platformatic.setOffsets(group, topic, [{ partition: 0, offset: "0" }])).rejects.toThrow(
          /while it is Stable/,
        );
        // A group that never existed is still Dead (ConsumerGroupDescribe's GROUP_ID_NOT_FOUND).
        expect(await platformatic.describeGroup(uniqueName("none"))).toEqual({ state: "Dead", members: [] });
      } finally {
        await platformatic.close();
      }
      // KafkaJS has no ConsumerGroupDescribe: to it the group looks Dead (the limit README states).
      const kafkajs = await KafkaAdmin.connect(testKafka());
      try {
        expect(await kafkajs.describeGroup(group)).toEqual({ state: "Dead", members: [] });
      } finally {
        await kafkajs.close();
      }

      // A dry run on KafkaJS sees a Dead group with committed offsets, and says what that means
      // instead of only "Add --execute" (newcomer finding).
      const dryKafkajs = await runCli([...replay, "--to-earliest"], { DATABASE_URL: stack.db.url });
      expect(dryKafkajs.code, dryKafkajs.stderr).toBe(0);
      expect(dryKafkajs.stdout).toContain(`for group ${group} (Dead)`);
      expect(dryKafkajs.stdout).toContain(
        `Group ${group} is Dead to KafkaJS yet has committed offsets: a KIP-848 group's members are seen only with KAFKA_CLIENT=platformatic; check with it before --execute (README, Limits).`,
      );
      expect(dryKafkajs.stdout).not.toContain("Add --execute");

      const dry = await runCli([...replay, "--to-earliest"], env);
      expect(dry.code, dry.stderr).toBe(0);
      expect(dry.stdout).toContain(`for group ${group} (Stable)`);
      expect(dry.stdout).toContain("The group has 1 active member(s): --execute is refused until they stop.");

      const refused = await runCli([...replay, "--to-earliest", "--execute"], env);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(
        `replay refused, nothing changed: consumer group ${group} is Stable with 1 active member`,
      );
      expect(refused.stderr).toMatch(/memberId=\S+ clientId=replayable host=\S+/);

      const rebuild = await runCli(
        ["rebuild", "--projection", "ledger", "--group", group, "--topic", topic, "--execute"],
        env,
      );
      expect(rebuild.code).toBe(1);
      expect(rebuild.stderr).toContain(
        `rebuild refused, nothing changed: consumer group ${group} is Stable with 1 active member`,
      );

      expect(await committedOf(stack.admin, group, topic)).toEqual(before);
      expect(await ledgerChecksumOf(stack.db.pool)).toBe(stream.checksum);
      expect(await eventIdCount(stack.db.pool)).toBe(stream.events);
    } finally {
      member.child.kill("SIGTERM");
      await member.exited;
    }
  });
});
