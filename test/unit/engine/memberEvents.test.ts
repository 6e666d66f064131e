import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { MemberEvents } from "../../../src/engine/memberEvents.js";
import { createLogger } from "../../../src/logger.js";

describe("MemberEvents", () => {
  it("calls the listeners in the order they subscribed; one that throws is logged and the others still run", () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const events = new MemberEvents(createLogger("warn", {}, sink));
    const calls: string[] = [];
    events
      .on("resumed", (e) => calls.push(`first ${e.partition}`))
      .on("resumed", () => {
        throw new Error("observer bug");
      })
      .on("resumed", (e) => calls.push(`third ${e.partition}`))
      .on("paused", () => calls.push("paused"));
    events.emit("resumed", { topic: "t", partition: 3 });
    expect(calls).toEqual(["first 3", "third 3"]);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("a member event listener threw; ignored");
    expect(lines[0]).toContain("observer bug");
  });
});
