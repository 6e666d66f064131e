/**
 * The CLI commands' resources (src/cli/commandResources.ts): closed last opened first, all of
 * them even when one fails to close, and the command's own error is the one reported.
 */
import { describe, expect, it } from "vitest";
import { withCommandResources } from "../../../src/cli/commandResources.js";

describe("withCommandResources", () => {
  it("closes what the command opened, last first, and returns its result", async () => {
    const closed: string[] = [];
    const result = await withCommandResources((open) => {
      open.onClose(() => Promise.resolve(void closed.push("pool")));
      open.onClose(() => Promise.resolve(void closed.push("admin")));
      return Promise.resolve(42);
    });
    expect(result).toBe(42);
    expect(closed).toEqual(["admin", "pool"]);
  });

  it("closes everything when the command throws, and throws the command's error, not a close's", async () => {
    const closed: string[] = [];
    const run = withCommandResources((open) => {
      open.onClose(() => Promise.resolve(void closed.push("pool")));
      open.onClose(() => {
        closed.push("admin");
        return Promise.reject(new Error("admin close failed"));
      });
      return Promise.reject(new Error("the command failed"));
    });
    await expect(run).rejects.toThrow("the command failed");
    expect(closed).toEqual(["admin", "pool"]);
  });

  it("attempts every close and reports the first failure when the command succeeded", async () => {
    const closed: string[] = [];
    const run = withCommandResources((open) => {
      open.onClose(() => Promise.resolve(void closed.push("pool")));
      open.onClose(() => Promise.reject(new Error("admin close failed")));
      return Promise.resolve("done");
    });
    await expect(run).rejects.toThrow("admin close failed");
    expect(closed).toEqual(["pool"]);
  });
});
