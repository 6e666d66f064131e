import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { expect, it } from "vitest";
import { unreadableFileReason } from "../../src/secrets/unreadableFile.js";

const failureOf = (path: string): unknown => {
  try {
    readFileSync(path, "utf8");
  } catch (error) {
    return error;
  }
  throw new Error(`${path} was readable`);
};

it("names why a file could not be read, from the error's code", () => {
  expect(unreadableFileReason(failureOf("/nonexistent/replayable.pem"))).toBe("no such file");
  expect(unreadableFileReason(failureOf(tmpdir()))).toBe("is a directory");
  expect(unreadableFileReason(Object.assign(new Error("x"), { code: "EACCES" }))).toBe("permission denied");
  expect(unreadableFileReason(Object.assign(new Error("x"), { code: "EMFILE" }))).toBe(
    "cannot be read (EMFILE)",
  );
});
