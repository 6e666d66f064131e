/**
 * Runs a scenario's subprocess under a memory limit, as a member runs in a container: a cgroup of
 * its own with the limit (cgroup v2 `memory.max`, or v1 `memory.limit_in_bytes`), entered before
 * Node.js starts. Node.js sizes V8's heap from the memory it may use (`process.constrainedMemory()`,
 * libuv's `uv_get_constrained_memory`, which reads the process's cgroup): on a machine with 24 GB and
 * no limit V8 takes a young generation sized for 24 GB, and a member's peak RSS says more about the
 * machine than about the member. The peak RSS target ("a member fits a small container") is measured
 * under the limit it stands for. Linux only; where no cgroup can be made (no write access to the
 * cgroup file system, another OS), {@link memoryLimited} says why and the scenario runs without one.
 */
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** A cgroup made for one subprocess, and how to start a command inside it. */
export interface MemoryLimitedCommand {
  /** The program to spawn: `/bin/sh`, which enters the cgroup and then execs the command. */
  readonly command: string;
  readonly args: readonly string[];
  /** The limit, bytes. */
  readonly limitBytes: number;
  /** Removes the cgroup (after the subprocess exited); never throws. */
  remove(): void;
}

/** Where this process's cgroups are, read from /proc/self/cgroup (cgroups(7)). */
interface CgroupPaths {
  /** The cgroup v2 path (`0::<path>`), when there is a unified hierarchy. */
  readonly v2?: string;
  /** The cgroup v1 path of the memory controller (`<n>:memory:<path>`), when it is mounted. */
  readonly v1Memory?: string;
}

/** Parses /proc/self/cgroup. Pure; exported for its unit test. */
export function parseProcCgroup(text: string): CgroupPaths {
  let v2: string | undefined;
  let v1Memory: string | undefined;
  for (const line of text.split("\n")) {
    const match = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (match === null) continue;
    const [, , controllers, path] = match;
    if (controllers === "") v2 = path;
    else if (controllers!.split(",").includes("memory")) v1Memory = path;
  }
  return { ...(v2 === undefined ? {} : { v2 }), ...(v1Memory === undefined ? {} : { v1Memory }) };
}

/** The candidate cgroup directories for a new child cgroup, the memory controller's first. */
function candidates(paths: CgroupPaths, name: string, root: string): { dir: string; limitFile: string }[] {
  const out: { dir: string; limitFile: string }[] = [];
  // v1 first: where both exist (a hybrid layout), the memory controller is on v1 and v2 has none.
  if (paths.v1Memory !== undefined)
    out.push({ dir: join(root, "memory", paths.v1Memory, name), limitFile: "memory.limit_in_bytes" });
  if (paths.v2 !== undefined) {
    for (const mount of [root, join(root, "unified")])
      out.push({ dir: join(mount, paths.v2, name), limitFile: "memory.max" });
  }
  return out;
}

/**
 * A cgroup named `name` below this process's own, limited to `limitBytes`, and the command that
 * starts `program args` inside it (`/bin/sh -c 'echo $$ > cgroup.procs && exec "$@"'`, so the
 * limit holds from the program's first instruction).
 * @param root the cgroup file system's mount point (default /sys/fs/cgroup).
 * @returns the command, or the reason no cgroup could be made (a string, to print).
 */
export function memoryLimited(
  name: string,
  limitBytes: number,
  program: string,
  args: readonly string[],
  root = "/sys/fs/cgroup",
): MemoryLimitedCommand | string {
  let paths: CgroupPaths;
  try {
    paths = parseProcCgroup(readFileSync("/proc/self/cgroup", "utf8"));
  } catch (error) {
    return `no /proc/self/cgroup (${(error as Error).message})`;
  }
  const reasons: string[] = [];
  for (const { dir, limitFile } of candidates(paths, name, root)) {
    try {
      mkdirSync(dir);
    } catch (error) {
      reasons.push(`${dir}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
      continue;
    }
    try {
      writeFileSync(join(dir, limitFile), String(limitBytes));
    } catch (error) {
      reasons.push(
        `${join(dir, limitFile)}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      );
      removeQuietly(dir);
      continue;
    }
    const procs = join(dir, "cgroup.procs");
    return {
      command: "/bin/sh",
      args: ["-c", `echo $$ > '${procs}' && exec "$@"`, "sh", program, ...args],
      limitBytes,
      remove: () => removeQuietly(dir),
    };
  }
  return reasons.length === 0 ? "this process is in no cgroup with a memory controller" : reasons.join("; ");
}

function removeQuietly(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // A cgroup with a process left in it cannot be removed; it is empty once the subprocess exited.
  }
}
