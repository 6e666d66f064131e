/**
 * CPU time of a process of this machine, read from /proc/<pid>/stat (proc(5): utime and stime,
 * fields 14 and 15, in clock ticks): PostgreSQL's backends (postgresCpu.ts), and the local Kafka
 * broker (`make up`'s single node, scripts/kafka/kafka.sh) before and after a scenario, its share
 * of the two cores the benchmark runs on.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on Linux). */
export const TICKS_PER_SECOND = 100;

/**
 * The pid of the local broker: `$KAFKA_DATA_DIR/kafka.pid`, by default `<repo>/.data/kafka/kafka.pid`
 * (the layout of scripts/kafka/kafka.sh with one node); undefined when there is none.
 */
export function localBrokerPid(repoRoot: string, env: NodeJS.ProcessEnv = process.env): number | undefined {
  const dir = env.KAFKA_DATA_DIR ?? join(repoRoot, ".data", "kafka");
  try {
    const pid = Number(readFileSync(join(dir, "kafka.pid"), "utf8").trim());
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * CPU time (user + system) process `pid` has used so far, clock ticks ({@link TICKS_PER_SECOND} a
 * second); undefined when /proc has no such process (gone, or running on another machine).
 */
export function cpuTicks(pid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // Fields after the command name, which is in parentheses and may contain spaces.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  return Number.isFinite(ticks) ? ticks : undefined;
}

/** CPU time (user + system) process `pid` has used so far, ms; undefined when it cannot be read. */
export function processCpuMs(pid: number | undefined): number | undefined {
  const ticks = pid === undefined ? undefined : cpuTicks(pid);
  return ticks === undefined ? undefined : (ticks * 1000) / TICKS_PER_SECOND;
}
