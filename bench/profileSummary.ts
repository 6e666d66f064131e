/**
 * Summarises a V8 CPU profile (`make bench BENCH_ARGS=--cpu-prof` writes one per scenario to
 * bench/results/profiles/<shape>/<scenario>/) or a sampling allocation profile (`--alloc-prof`,
 * `<scenario>.<pid>.heapprofile`): self time, or bytes allocated, grouped by package or source
 * folder, and the top functions. What Node's internals and native code do (socket writes, hashing,
 * Buffer operations) is charged to the nearest caller in a package or in our code, so "pg" includes
 * the socket writes of its queries. Usage: npx tsx bench/profileSummary.ts <file> [top]
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

/** The parts of the .heapprofile format (HeapProfiler.SamplingHeapProfile) read here. */
interface HeapProfileNode {
  readonly id: number;
  readonly selfSize: number;
  readonly children: readonly HeapProfileNode[];
  readonly callFrame: CpuProfile["nodes"][number]["callFrame"];
}

/** A profile as a call tree with an amount per node: µs of self time, or bytes allocated. */
interface Tree {
  readonly nodes: CpuProfile["nodes"];
  readonly self: Map<number, number>;
  readonly unit: "time" | "bytes";
}

function treeOf(profile: CpuProfile | { readonly head: HeapProfileNode }): Tree {
  if ("head" in profile) {
    const nodes: CpuProfile["nodes"][number][] = [];
    const self = new Map<number, number>();
    const visit = (n: HeapProfileNode) => {
      nodes.push({ id: n.id, children: n.children.map((c) => c.id), callFrame: n.callFrame });
      if (n.selfSize > 0) self.set(n.id, n.selfSize);
      n.children.forEach(visit);
    };
    visit(profile.head);
    return { nodes, self, unit: "bytes" };
  }
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  return { nodes: profile.nodes, self, unit: "time" };
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
  const tree = treeOf(JSON.parse(readFileSync(file, "utf8")) as CpuProfile | { head: HeapProfileNode });
  const byId = new Map(tree.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const n of tree.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
  const isInternal = (url: string) => url === "" || url.startsWith("node:");
  // The nearest frame outside Node's internals; the node itself when it has none (idle, GC, program).
  const chargedTo = (id: number) => {
    for (let cur: number | undefined = id; cur !== undefined; cur = parentOf.get(cur)) {
      if (!isInternal(byId.get(cur)!.callFrame.url)) return cur;
    }
    return id;
  };
  let total = 0;
  const groups = new Map<string, number>();
  const functions = new Map<string, number>();
  for (const [id, us] of tree.self) {
    const frame = byId.get(chargedTo(id))!.callFrame;
    total += us;
    const group = groupOf(frame.url, frame.functionName);
    groups.set(group, (groups.get(group) ?? 0) + us);
    const name = `${frame.functionName || "(anonymous)"} ${frame.url.replace(/^.*node_modules\//, "")}:${frame.lineNumber + 1}`;
    functions.set(name, (functions.get(name) ?? 0) + us);
  }
  // Microseconds shown as ms, bytes as MB.
  const [scale, unit, what] = tree.unit === "time" ? [1000, "ms", "self time"] : [1e6, "MB", "allocated"];
  const print = (title: string, entries: Map<string, number>) => {
    process.stdout.write(`${title}\n`);
    for (const [name, amount] of [...entries].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      process.stdout.write(
        `  ${((100 * amount) / total).toFixed(1).padStart(5)}%  ${(amount / scale).toFixed(0).padStart(7)} ${unit}  ${name}\n`,
      );
    }
  };
  process.stdout.write(`${file}: ${(total / scale).toFixed(0)} ${unit} sampled\n`);
  print(`${what} by package / folder`, groups);
  print(`${what} by function`, functions);
}

main();
