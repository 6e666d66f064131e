import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { memoryLimited, parseProcCgroup } from "../../../bench/memoryLimit.js";

describe("parseProcCgroup", () => {
  it("reads the unified path and the v1 memory controller's path", () => {
    const text = ["9:name=systemd:/", "4:memory:/process_api/abc", "3:cpu,cpuacct:/", "0::/user.slice"].join(
      "\n",
    );
    expect(parseProcCgroup(text)).toEqual({ v2: "/user.slice", v1Memory: "/process_api/abc" });
  });

  it("reads a cgroup v2 only machine", () => {
    expect(parseProcCgroup("0::/system.slice/x.service\n")).toEqual({ v2: "/system.slice/x.service" });
  });
});

describe("memoryLimited", () => {
  let root: string | undefined;
  afterEach(() => {
    if (root !== undefined) rmSync(root, { recursive: true, force: true });
    root = undefined;
  });

  it("writes the limit, and starts the program after its pid is in cgroup.procs", () => {
    root = mkdtempSync(join(tmpdir(), "cgroup-"));
    // A directory tree standing in for the cgroup file system: the parent of this process's cgroup.
    const paths = parseProcCgroup(readFileSync("/proc/self/cgroup", "utf8"));
    for (const dir of [
      ...(paths.v1Memory === undefined ? [] : [join(root, "memory", paths.v1Memory)]),
      ...(paths.v2 === undefined ? [] : [join(root, paths.v2)]),
    ])
      spawnSync("mkdir", ["-p", dir]);
    const limited = memoryLimited(
      "scenario",
      512 * 1024 * 1024,
      process.execPath,
      ["-e", "console.log(process.pid)"],
      root,
    );
    if (typeof limited === "string") throw new Error(limited);
    const dir =
      paths.v1Memory !== undefined
        ? join(root, "memory", paths.v1Memory, "scenario")
        : join(root, paths.v2!, "scenario");
    const limitFile = paths.v1Memory !== undefined ? "memory.limit_in_bytes" : "memory.max";
    expect(readFileSync(join(dir, limitFile), "utf8")).toBe(String(512 * 1024 * 1024));
    const run = spawnSync(limited.command, limited.args, { encoding: "utf8" });
    expect(run.status).toBe(0);
    // exec: the pid written by the shell is the program's own.
    expect(readFileSync(join(dir, "cgroup.procs"), "utf8").trim()).toBe(run.stdout.trim());
    rmSync(join(dir, limitFile));
    rmSync(join(dir, "cgroup.procs"));
    limited.remove();
    expect(existsSync(dir)).toBe(false);
  });

  it("says why when no cgroup can be made", () => {
    root = mkdtempSync(join(tmpdir(), "cgroup-"));
    // No parent directory: mkdir fails for every candidate.
    const limited = memoryLimited("scenario", 1024, process.execPath, [], join(root, "absent"));
    expect(typeof limited).toBe("string");
    expect(limited).toMatch(/ENOENT/);
  });
});
