/**
 * One benchmark scenario in a subprocess of its own (so its peak RSS is its own): reads the
 * {@link ScenarioSpec} from argv[2] as JSON, runs it, and prints the measurement after
 * {@link RESULT_MARKER} on stdout. Started by bench/run.ts; not meant to be run by hand.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { dirname } from "node:path";
import { createLogger } from "../src/logger.js";
import type { Projection } from "../src/projection.js";
import type { LedgerEvent } from "../src/projections/ledger/events.js";
import { ledgerPerRecordProjection, ledgerProjection } from "../src/projections/ledger/ledgerProjection.js";
import { PostgresCpuSampler } from "./postgresCpu.js";
import { RESULT_MARKER, peakRssBytes, type ScenarioMeasurement, type ScenarioSpec } from "./scenario.js";
import { runNaive } from "./scenarios/naive.js";
import { runRawKafkajs } from "./scenarios/rawKafkajs.js";
import { runRawPlatformatic } from "./scenarios/rawPlatformatic.js";
import { runReplayable } from "./scenarios/replayable.js";
import { Tally } from "./tally.js";

/**
 * Scenario `batch-offset`: the ledger with its set-based batch apply, deduplicated by offset instead
 * of by `ce_id`, so a re-sent record is applied again (the stream's everyRecordChecksum).
 */
const ledgerOffsetProjection: Projection<LedgerEvent> = { ...ledgerProjection, dedupe: { kind: "offset" } };

async function main(): Promise<void> {
  const text = process.argv[2];
  if (text === undefined)
    throw new Error("usage: child.ts '<scenario spec as JSON>' (bench/run.ts starts it)");
  const spec = JSON.parse(text) as ScenarioSpec;
  const log = createLogger(process.env.LOG_LEVEL ?? "warn", { scenario: spec.scenario });
  const tally = new Tally(spec);
  const postgresCpu = spec.databaseUrl === "" ? undefined : new PostgresCpuSampler(spec.databaseUrl);
  await postgresCpu?.start();
  const allocations = spec.allocationProfile === undefined ? undefined : await startAllocationSampling();
  switch (spec.scenario) {
    case "raw":
    case "raw-1mib":
      await runRawKafkajs(spec, tally, log);
      break;
    case "raw-platformatic":
      await runRawPlatformatic(spec, tally);
      break;
    case "naive":
      await runNaive(spec, tally, log);
      break;
    case "per-record":
      await runReplayable(spec, ledgerPerRecordProjection, tally, log);
      break;
    case "batch":
    case "replay":
      await runReplayable(spec, ledgerProjection, tally, log);
      break;
    case "batch-offset":
      await runReplayable(spec, ledgerOffsetProjection, tally, log);
      break;
  }
  if (allocations !== undefined && spec.allocationProfile !== undefined)
    await allocations.stop(spec.allocationProfile);
  const postgresCpuMs = (await postgresCpu?.stop()) ?? null;
  const measurement: ScenarioMeasurement = {
    ...tally.measurement(),
    postgresCpuMs,
    peakRssBytes: peakRssBytes(),
  };
  process.stdout.write(`${RESULT_MARKER}${JSON.stringify(measurement)}\n`);
}

/**
 * Starts V8's sampling heap profiler (Chrome DevTools protocol `HeapProfiler.startSampling`) with
 * the objects later collected by minor and major GCs kept in the profile: allocation, not retention.
 * One sample per 16 KiB allocated on average.
 */
async function startAllocationSampling(): Promise<{ stop(file: string): Promise<void> }> {
  const session = new Session();
  session.connect();
  await session.post("HeapProfiler.enable");
  await session.post("HeapProfiler.startSampling", {
    samplingInterval: 16384,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  return {
    async stop(file) {
      const { profile } = await session.post("HeapProfiler.stopSampling");
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, JSON.stringify(profile));
      session.disconnect();
    },
  };
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(
      `bench scenario failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
