/**
 * Summarises a V8 CPU profile (`make bench BENCH_ARGS=--cpu-prof` writes one per scenario to
 * bench/results/profiles/<scenario>/): self time grouped by package or source folder, and the top
 * functions. Time spent in Node's internals and native code (socket writes, hashing, Buffer
 * operations) is charged to the nearest caller in a package or in our code, so "pg" includes the
 * socket writes of its queries. Usage: npx tsx bench/profileSummary.ts <file.cpuprofile> [top]
 */
import { readFileSync } from "node:fs";

/** The parts of the .cpuprofile format (Chrome DevTools protocol, Profiler.Profile) read here. */
interface CpuProfile {
  readonly nodes: readonly {
    readonly id: number;
    readonly children?: readonly number[];
    readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  }[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** Where a function lives: a package under node_modules, a folder of ours, or a V8/Node category. */
export function groupOf(url: string, functionName: string): string {
  if (url === "") return `(${functionName || "native"})`;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg !== null) return pkg[1]!;
  if (url.startsWith("node:")) return "node internals";
  const ours = /\/(src\/[^/]+|bench)\//.exec(url);
  return ours !== null ? ours[1]! : url;
}

function main(): void {
  const file = process.argv[2];
  if (file === undefined) throw new Error("usage: profileSummary.ts <file.cpuprofile> [top]");
  const top = Number(process.argv[3] ?? "25");
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
  const isInternal = (url: string) => url === "" || url.startsWith("node:");
  // The nearest frame outside Node's internals; the node itself when it has none (idle, GC, program).
  const chargedTo = (id: number) => {
    for (let cur: number | undefined = id; cur !== undefined; cur = parentOf.get(cur)) {
      if (!isInternal(byId.get(cur)!.callFrame.url)) return cur;
    }
    return id;
  };
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  let total = 0;
  const groups = new Map<string, number>();
  const functions = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const frame = byId.get(chargedTo(id))!.callFrame;
    total += us;
    const group = groupOf(frame.url, frame.functionName);
    groups.set(group, (groups.get(group) ?? 0) + us);
    const name = `${frame.functionName || "(anonymous)"} ${frame.url.replace(/^.*node_modules\//, "")}:${frame.lineNumber + 1}`;
    functions.set(name, (functions.get(name) ?? 0) + us);
  }
  const print = (title: string, entries: Map<string, number>) => {
    process.stdout.write(`${title}\n`);
    for (const [name, us] of [...entries].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      process.stdout.write(
        `  ${((100 * us) / total).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(7)} ms  ${name}\n`,
      );
    }
  };
  process.stdout.write(`${file}: ${(total / 1000).toFixed(0)} ms sampled\n`);
  print("self time by package / folder", groups);
  print("self time by function", functions);
}

main();
