/** The message of a promote or rollback that lost a race with another version change. */
import { describe, expect, it } from "vitest";
import { versionsChangedMessage } from "../../../src/versions/swapVersions.js";

const rollback = {
  projection: "sales",
  from: 2,
  to: 1,
  toState: "retired" as const,
  audit: { action: "rollback" as const },
};

describe("versionsChangedMessage", () => {
  it("says plainly that another command won, what this rollback was to do, what is live now, and that nothing changed", () => {
    // Two rollbacks at once: the first made version 1 live and version 2 a shadow.
    expect(versionsChangedMessage(rollback, 1, "live")).toBe(
      "rollback refused, nothing changed: another promote, rollback or drop-version of sales ran while this rollback was checking. " +
        "This rollback was to make version 1 (retired) live in place of version 2; now version 1 is live. " +
        "Look at the versions with `replayable status --projection sales`, then run `replayable rollback` again if it is still wanted.",
    );
  });

  it("names the target's state now, or that it is gone, and a promote as a promote", () => {
    expect(versionsChangedMessage(rollback, 3, "retired")).toContain(
      "now version 3 is live and version 1 is retired.",
    );
    const promote = {
      ...rollback,
      from: 1,
      to: 2,
      toState: "shadow" as const,
      audit: { action: "promote" as const },
    };
    const message = versionsChangedMessage(promote, 1, undefined);
    expect(message).toMatch(/^promote refused, nothing changed: /);
    expect(message).toContain(
      "This promote was to make version 2 (shadow) live in place of version 1; now version 1 is live and version 2 is gone.",
    );
    expect(message).not.toMatch(/meanwhile \(live/);
  });
});
