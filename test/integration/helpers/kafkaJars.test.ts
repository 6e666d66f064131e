import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it, onTestFinished } from "vitest";

// secure-kafka.sh and the cluster helpers capture `kafka.sh jars` as the classpath folder: on a
// first fetch Maven's output (colour codes included) once went to stdout and broke that classpath.
it("`kafka.sh jars` prints only the jar folder, also when it fetches the jars first", () => {
  const cache = mkdtempSync(join(tmpdir(), "replayable-jars-"));
  onTestFinished(() => rmSync(cache, { recursive: true, force: true }));
  const script = join(import.meta.dirname, "..", "..", "..", "scripts", "kafka", "kafka.sh");
  const run = () =>
    execFileSync(script, ["jars"], {
      env: { ...process.env, KAFKA_CACHE_DIR: cache, TERM: "xterm-256color" },
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
  const fetched = run();
  expect(fetched).toMatch(new RegExp(`^${cache}/[0-9.]+\\n$`));
  expect(run()).toBe(fetched);
}, 300_000);
