import { describe, expect, it } from "vitest";
import { parseTopicArgs } from "../../../src/replay/topicPartitions.js";

describe("parseTopicArgs", () => {
  it("reads T as every partition and T:p,q as some, merging repeats", () => {
    expect(parseTopicArgs(["orders:2,0", "payments", "orders:1,2"])).toEqual([
      { topic: "orders", partitions: [0, 1, 2] },
      { topic: "payments" },
    ]);
  });

  it("lets a topic named alone win over its partition list", () => {
    expect(parseTopicArgs(["orders:1", "orders"])).toEqual([{ topic: "orders" }]);
  });

  it.each([
    ["bad topic!", "does not start with a topic name"],
    [":1", "does not start with a topic name"],
    ["orders:", 'has partition ""'],
    ["orders:a", 'has partition "a"'],
    ["orders:-1", 'has partition "-1"'],
    ["orders:2147483648", 'has partition "2147483648"'],
  ])("refuses %s (%s)", (value, why) => {
    expect(() => parseTopicArgs([value])).toThrow(why);
  });
});
