/** Loading the bad-input corpus (test/fixtures/bad-input, see its README) into records to produce. */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ProducerRecord } from "../../src/kafka/producer.js";

/** How a fixture spells bytes. */
type BytesSpec =
  | null
  | { utf8: string }
  | { base64: string }
  | { json: unknown }
  | { repeat: { utf8: string; times: number }; prefix?: string; suffix?: string };

/** What must become of a fixture record. */
export type Expectation =
  { deadLetter: string } | { applied: { account: string; delta: string } } | { duplicate: true };

interface FixtureFile {
  description: string;
  records: {
    key: BytesSpec;
    value: BytesSpec;
    headers: Record<string, BytesSpec | BytesSpec[]>;
    expect: Expectation;
  }[];
}

/** One record of the corpus, as bytes, with the header `x-fixture: <file>#<index>` that names it. */
export interface FixtureRecord {
  readonly name: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: Record<string, Buffer[]>;
  readonly expect: Expectation;
}

/** Header added to every corpus record so its dead letter can be matched to it. */
export const FIXTURE_HEADER = "x-fixture";

const DIR = join(import.meta.dirname, "..", "fixtures", "bad-input");

function bytes(spec: BytesSpec): Buffer | null {
  if (spec === null) return null;
  if ("utf8" in spec) return Buffer.from(spec.utf8, "utf8");
  if ("base64" in spec) return Buffer.from(spec.base64, "base64");
  if ("json" in spec) return Buffer.from(JSON.stringify(spec.json), "utf8");
  return Buffer.from(
    `${spec.prefix ?? ""}${spec.repeat.utf8.repeat(spec.repeat.times)}${spec.suffix ?? ""}`,
    "utf8",
  );
}

/** Every fixture file's records, by file (kind) name, in the order the file lists them. */
export function loadBadInput(): Map<string, FixtureRecord[]> {
  const kinds = new Map<string, FixtureRecord[]>();
  for (const file of readdirSync(DIR)
    .filter((f) => f.endsWith(".json"))
    .sort()) {
    const kind = file.replace(/\.json$/, "");
    const parsed = JSON.parse(readFileSync(join(DIR, file), "utf8")) as FixtureFile;
    kinds.set(
      kind,
      parsed.records.map((r, i) => {
        const name = `${kind}#${i}`;
        const headers: Record<string, Buffer[]> = {};
        for (const [header, spec] of Object.entries(r.headers)) {
          headers[header] = (Array.isArray(spec) ? spec : [spec]).map((s) => bytes(s) ?? Buffer.alloc(0));
        }
        headers[FIXTURE_HEADER] = [Buffer.from(name)];
        return { name, key: bytes(r.key), value: bytes(r.value), headers, expect: r.expect };
      }),
    );
  }
  return kinds;
}

/** A fixture record to produce to `partition`. */
export function toProducerRecord(record: FixtureRecord, partition: number): ProducerRecord {
  return {
    key: record.key,
    value: record.value,
    partition,
    headers: Object.fromEntries(Object.entries(record.headers).map(([n, v]) => [n, v[0]!])),
  };
}
