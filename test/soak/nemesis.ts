/**
 * The soak's nemesis (Jepsen's nemesis): faults picked at random from a seeded PRNG, one at a time,
 * each started, held for a random time, and healed before the next, with a quiet pause in between.
 * Every fault's start, its parameters and its end go to the history, with the group's committed
 * offsets and the high watermarks at both ends.
 *
 * The faults (weights in {@link FAULT_WEIGHTS}):
 * - `member-kill`: SIGKILL one member (no leave-group), restart it after 1–8 s;
 * - `member-kill-all`: SIGKILL every member at once, restart them;
 * - `member-pause`: SIGSTOP one member for 2–20 s (longer than the session timeout: the group
 *   moves its partitions, and on SIGCONT it is a zombie with batches in flight), then SIGCONT;
 * - `broker-kill` / `broker-stop`: SIGKILL (a crash) or SIGTERM (controlled shutdown) one broker,
 *   start it again after 3–20 s and wait until it is back in the ISR;
 * - `leader-move`: move one partition's leader to another replica (preferred leader election;
 *   the old leader keeps serving fetches as a follower, KIP-392);
 * - `leader-reassign`: take a partition's leader out of its replica set (consumers see
 *   NOT_LEADER_OR_FOLLOWER and refresh their metadata), hold, then restore all three replicas;
 * - `replay`: the operator's replay: stop every member gracefully, wait until the group is
 *   Empty, `replay --to-earliest` or `--shift-by -N` `--execute`, start them again;
 * - `rebuild`: `rebuild --execute` while the members run, which the CLI must refuse (group has
 *   members, advisory lock held); then the operator's way: stop the members, `rebuild --execute`,
 *   start them again (they apply the whole log anew);
 * - network faults through {@link NetworkFaults} (network.ts) when the runner has them:
 *   `postgres-silent` / `broker-silent` (every connection of the members to PostgreSQL, or to one
 *   broker, half-open for 2–75 s, then reset), `postgres-reset` /
 *   `broker-reset` (connections reset, new ones refused, for 2–20 s), `latency` (one of them slow by
 *   50–1500 ms per chunk for 5–20 s).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { errorMessage } from "../../src/errors.js";
import type { ClusterAdmin } from "../../src/kafka/admin.js";
import {
  CLUSTER_NODES,
  killBroker,
  moveLeader,
  reassignPartition,
  restartBroker,
  stopBroker,
  topicState,
  waitForInSync,
} from "../helpers/cluster.js";
import { waitFor } from "../helpers/stack.js";
import type { History } from "./history.js";
import type { Members } from "./members.js";
import type { SoakRandom } from "./random.js";

/** The result of one CLI run. */
export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Network faults the nemesis can use when the runner put fault proxies in front of PostgreSQL and the brokers. */
export interface NetworkFaults {
  /** Names of the targets: `postgres`, `broker-1`, … */
  readonly targets: readonly string[];
  /** Puts `target` into `mode`. */
  set(target: string, mode: "silent" | "reset" | { latencyMs: number }): Promise<void>;
  /** Back to pass; connections silenced stay silent (half-open) until their owner gives up. */
  restore(target: string): Promise<void>;
  /** Connections through `target`'s proxy now (for the history). */
  openConnections(target: string): number;
}

/** What the nemesis acts on. */
export interface NemesisContext {
  readonly random: SoakRandom;
  readonly history: History;
  readonly members: Members;
  readonly admin: ClusterAdmin;
  readonly topic: string;
  readonly group: string;
  /** The members' session timeout (ms): how long a killed member stays in the group. */
  readonly sessionTimeoutMs: number;
  /** Runs `replayable <args>` with the soak's database and brokers. */
  cli(args: readonly string[]): Promise<CliResult>;
  /**
   * {@link cli} again every 5 s while it is refused (exit code 1 and "refused" on stderr: the group
   * still has members, or a stopped member's session still holds the advisory lock), for at most
   * 3 minutes; each refusal goes to the history.
   */
  cliUntilAccepted(args: readonly string[]): Promise<CliResult>;
  readonly network?: NetworkFaults;
  /** Only these faults (default: every fault of {@link FAULT_WEIGHTS}, the network ones when `network` is set). */
  readonly only?: readonly FaultName[];
}

/** Relative weights of the faults. */
export const FAULT_WEIGHTS = {
  "member-kill": 4,
  "member-kill-all": 1,
  "member-pause": 4,
  "broker-kill": 2,
  "broker-stop": 2,
  "leader-move": 3,
  "leader-reassign": 2,
  replay: 2,
  rebuild: 1,
  "postgres-silent": 2,
  "postgres-reset": 1,
  "broker-silent": 2,
  "broker-reset": 1,
  latency: 1,
} as const;

/** A fault's name. */
export type FaultName = keyof typeof FAULT_WEIGHTS;

const NETWORK_FAULTS: readonly FaultName[] = [
  "postgres-silent",
  "postgres-reset",
  "broker-silent",
  "broker-reset",
];

/** Whether `name` is a fault's name. */
export function isFaultName(name: string): name is FaultName {
  return Object.hasOwn(FAULT_WEIGHTS, name);
}

/** Runs faults until {@link stop} is called or `until` (epoch ms) passes; heals the last one. */
export class Nemesis {
  #stopping = false;
  #loop: Promise<void> | undefined;
  /** Faults run, by name. */
  readonly counts = new Map<FaultName, number>();

  constructor(private readonly ctx: NemesisContext) {}

  /** Starts the fault loop in the background. */
  start(until: number): void {
    this.#loop = this.#run(until);
  }

  /** Stops picking faults and waits until the current one is healed. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#loop;
  }

  async #run(until: number): Promise<void> {
    const { random, history } = this.ctx;
    const weights: Record<string, number> = { ...FAULT_WEIGHTS };
    if (this.ctx.network === undefined) for (const f of NETWORK_FAULTS) weights[f] = 0;
    const only = this.ctx.only;
    if (only !== undefined)
      for (const f of Object.keys(weights)) if (!only.includes(f as FaultName)) weights[f] = 0;
    if (Object.values(weights).every((w) => w === 0)) throw new Error("the nemesis has no fault to pick");
    // Let the group form and apply a little before the first fault.
    await this.#quiet(random.int(3, 8) * 1000, until);
    while (!this.#stopping && Date.now() < until) {
      const fault = random.weighted(weights) as FaultName;
      this.counts.set(fault, (this.counts.get(fault) ?? 0) + 1);
      const started = Date.now();
      try {
        await this.#fault(fault);
      } catch (error) {
        history.write("fault-error", { fault, error: errorMessage(error) });
      }
      history.write("fault-end", { fault, ms: Date.now() - started, ...(await this.#offsets()) });
      await this.#quiet(random.int(2, 10) * 1000, until);
    }
  }

  async #quiet(ms: number, until: number): Promise<void> {
    const end = Math.min(Date.now() + ms, until);
    while (!this.#stopping && Date.now() < end) await sleep(Math.min(500, end - Date.now()));
  }

  /** The group's committed offsets, the topic's high watermarks and its leaders, for the history. */
  async #offsets(): Promise<Record<string, unknown>> {
    try {
      const [ends, committed, state] = await Promise.all([
        this.ctx.admin.topicOffsets(this.ctx.topic),
        this.ctx.admin.committedOffsets(this.ctx.group, [this.ctx.topic]),
        topicState(this.ctx.topic),
      ]);
      return {
        highWatermarks: Object.fromEntries(ends.map((e) => [e.partition, e.highWatermark])),
        committed: Object.fromEntries(committed.map((c) => [c.partition, c.offset])),
        leaders: Object.fromEntries(state.map((p) => [p.partition, p.leader])),
      };
    } catch (error) {
      return { offsetsError: errorMessage(error) };
    }
  }

  #start(fault: FaultName, fields: Record<string, unknown>): Promise<void> {
    return this.#offsets().then((o) => this.ctx.history.write("fault-start", { fault, ...fields, ...o }));
  }

  async #fault(fault: FaultName): Promise<void> {
    const { random, members, topic, history } = this.ctx;
    switch (fault) {
      case "member-kill": {
        const m = random.pick(members.all);
        const holdMs = random.int(1, 8) * 1000;
        await this.#start(fault, { member: m.name, pid: m.pid, holdMs });
        await m.kill();
        await sleep(holdMs);
        m.start();
        return;
      }
      case "member-kill-all": {
        const holdMs = random.int(1, 8) * 1000;
        await this.#start(fault, { holdMs });
        await members.killAll();
        await sleep(holdMs);
        members.startAll();
        return;
      }
      case "member-pause": {
        const m = random.pick(members.all);
        const holdMs = random.int(2, 20) * 1000;
        await this.#start(fault, { member: m.name, pid: m.pid, holdMs });
        m.pause();
        try {
          await sleep(holdMs);
        } finally {
          m.resume();
        }
        return;
      }
      case "broker-kill":
      case "broker-stop": {
        const broker = random.int(1, CLUSTER_NODES);
        const holdMs = random.int(3, 20) * 1000;
        await this.#start(fault, { broker, holdMs });
        try {
          await (fault === "broker-kill" ? killBroker(broker) : stopBroker(broker));
          await sleep(holdMs);
        } finally {
          await restartBroker(broker);
          await this.#inSync(broker);
        }
        return;
      }
      case "leader-move": {
        const state = await topicState(topic);
        const p = random.pick(state);
        const others = p.isr.filter((b) => b !== p.leader);
        if (others.length === 0) {
          history.write("fault-skipped", {
            fault,
            partition: p.partition,
            reason: "no other in-sync replica",
          });
          return;
        }
        const to = random.pick(others);
        await this.#start(fault, { partition: p.partition, from: p.leader, to });
        await moveLeader(topic, p.partition, to);
        return;
      }
      case "leader-reassign": {
        const state = await topicState(topic);
        const p = random.pick(state);
        const rest = p.replicas.filter((b) => b !== p.leader);
        if (p.leader < 0 || rest.length < 2 || !rest.every((b) => p.isr.includes(b))) {
          history.write("fault-skipped", {
            fault,
            partition: p.partition,
            reason: "replicas not all in sync",
          });
          return;
        }
        const holdMs = random.int(2, 10) * 1000;
        const shrunk = random.float() < 0.5 ? rest : [...rest].reverse();
        await this.#start(fault, { partition: p.partition, from: p.leader, replicas: shrunk, holdMs });
        await reassignPartition(topic, p.partition, shrunk);
        await sleep(holdMs);
        // Back to three replicas, the removed broker last (it copies the partition again).
        await reassignPartition(topic, p.partition, [...shrunk, p.leader]);
        await this.#inSync(p.leader);
        return;
      }
      case "latency": {
        const network = this.ctx.network!;
        const target = random.pick(network.targets);
        const latencyMs = random.int(50, 1500);
        const holdMs = random.int(5, 20) * 1000;
        await this.#start(fault, { target, latencyMs, holdMs });
        await network.set(target, { latencyMs });
        try {
          await sleep(holdMs);
        } finally {
          await network.restore(target);
        }
        return;
      }
      case "replay":
        return this.#replay();
      case "rebuild":
        return this.#rebuild();
      case "postgres-silent":
      case "postgres-reset":
      case "broker-silent":
      case "broker-reset": {
        const network = this.ctx.network!;
        const pool = network.targets.filter((t) =>
          fault.startsWith("postgres") ? t === "postgres" : t !== "postgres",
        );
        const target = random.pick(pool);
        const mode = fault.endsWith("silent") ? "silent" : "reset";
        // Silent up to 75 s: past the member's PostgreSQL query timeout (60 s) at times.
        const holdMs = random.int(2, mode === "silent" ? 75 : 20) * 1000;
        await this.#start(fault, { target, mode, holdMs, connections: network.openConnections(target) });
        await network.set(target, mode);
        try {
          await sleep(holdMs);
        } finally {
          await network.restore(target);
        }
        return;
      }
    }
  }

  /** Waits (best effort, recorded) until `broker` is back in the ISR of the topic and of __consumer_offsets. */
  async #inSync(broker: number): Promise<void> {
    for (const t of [this.ctx.topic, "__consumer_offsets"]) {
      try {
        await waitForInSync(t, broker, 120_000);
      } catch (error) {
        this.ctx.history.write("wait-error", {
          what: `broker ${broker} in the ISR of ${t}`,
          error: errorMessage(error),
        });
      }
    }
  }

  /** Stops every member gracefully and waits until the coordinator shows the group Empty. */
  async #stopGroup(): Promise<void> {
    const codes = await this.ctx.members.stopAll();
    this.ctx.history.write("members-stopped", { codes });
    await this.waitEmpty();
  }

  /**
   * Waits until the group has no members (a SIGKILLed member stays until its session times out).
   * @throws Error after the session timeout plus two minutes.
   */
  async waitEmpty(): Promise<void> {
    await waitFor(
      `group ${this.ctx.group} to be empty`,
      async () =>
        (await this.ctx.admin.describeGroup(this.ctx.group)).members.length === 0 ? true : undefined,
      this.ctx.sessionTimeoutMs + 120_000,
      500,
    );
  }

  async #replay(): Promise<void> {
    const { random, history, members, group } = this.ctx;
    const spec = random.float() < 0.5 ? ["--to-earliest"] : ["--shift-by", String(-random.int(1, 400))];
    await this.#start("replay", { spec });
    try {
      await this.#stopGroup();
      const r = await this.ctx.cliUntilAccepted([
        "replay",
        "--group",
        group,
        "--projection",
        "ledger",
        "--all-topics",
        ...spec,
        "--execute",
        "--output",
        "json",
      ]);
      history.write("replay", {
        code: r.code,
        stdout: summary(r.stdout),
        stderr: r.stderr.trim().slice(-500),
      });
      if (r.code !== 0) throw new Error(`replay --execute exited ${r.code}: ${r.stderr.trim()}`);
    } finally {
      members.startAll();
    }
  }

  async #rebuild(): Promise<void> {
    const { history, members, group, topic } = this.ctx;
    const args = [
      "rebuild",
      "--projection",
      "ledger",
      "--group",
      group,
      "--topic",
      topic,
      "--execute",
      "--output",
      "json",
    ];
    await this.#start("rebuild", {});
    // While the members run: the CLI must refuse (the group has members; a run holds the advisory lock).
    const live = members.live().length;
    const early = await this.ctx.cli(args);
    history.write("rebuild-while-running", {
      liveMembers: live,
      code: early.code,
      stdout: summary(early.stdout),
      stderr: early.stderr.trim().slice(-500),
    });
    if (early.code === 0 && live > 0)
      history.write("finding", { what: "rebuild --execute succeeded while members ran" });
    try {
      await this.#stopGroup();
      const r = await this.ctx.cliUntilAccepted(args);
      history.write("rebuild", {
        code: r.code,
        stdout: summary(r.stdout),
        stderr: r.stderr.trim().slice(-500),
      });
      if (r.code !== 0) throw new Error(`rebuild --execute exited ${r.code}: ${r.stderr.trim()}`);
    } finally {
      members.startAll();
    }
  }
}

/** A CLI's JSON output, parsed for the history (its text, cut short, when it is not JSON). */
function summary(stdout: string): unknown {
  try {
    return JSON.parse(stdout) as unknown;
  } catch {
    return stdout.trim().slice(0, 500);
  }
}
