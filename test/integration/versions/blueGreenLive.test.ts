/**
 * A blue/green rebuild while a producer writes continuously and a reader queries the stable name in
 * a loop, against the real Kafka and PostgreSQL: version 2 catches up beside version 1, is promoted
 * (its lag within the bound, its tables equal at the same checkpoints, or, for a changed projection,
 * different and promoted with `--allow-different`), the reader never sees an empty or partial table,
 * and once the producer stops each version equals a from-scratch computation of its own code over
 * every record produced: none produced during the switch was lost or applied twice.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import type { ClusterAdmin } from "../../../src/kafka/admin.js";
import { testAdmin, waitFor } from "../../helpers/stack.js";
import { versionedStack } from "../../helpers/versionedStack.js";

let admin: ClusterAdmin;
beforeAll(async () => {
  admin = await testAdmin();
});
afterAll(async () => {
  await admin?.close();
});

/**
 * The two projections under test: `same` runs version 2 with version 1's code (equal tables);
 * `changed` runs it with `BG_VARIANT=changed` (a new column, cents counted twice: tables differ).
 */
interface Variant {
  readonly name: "same" | "changed";
  /** The environment of version 2's member and of promote. */
  readonly env: Record<string, string>;
  /** promote's extra flags. */
  readonly promoteFlags: readonly string[];
  /** Cents version 2 adds for a sale of `cents`. */
  readonly centsFactor: number;
}

const VARIANTS: readonly Variant[] = [
  {
    name: "same",
    env: {},
    promoteFlags: [],
    centsFactor: 1,
  },
  {
    name: "changed",
    env: { BG_VARIANT: "changed" },
    promoteFlags: ["--allow-different"],
    centsFactor: 2,
  },
];

describe.each(VARIANTS)("blue/green rebuild under load ($name code)", (variant) => {
  it("promotes version 2 while a producer writes and a reader reads the stable view: never empty or partial, nothing lost or doubled", async () => {
    const first = 40;
    const bg = await versionedStack(admin, "bgl", first);
    const { db, name } = bg;
    bg.run([]);
    await bg.waitForCaughtUp(1);

    // The producer: 3 sales per send, numbered on, until told to stop.
    let produced = first;
    let producing = true;
    const producer = (async () => {
      while (producing) {
        await bg.produceSales(3, produced);
        produced += 3;
        // Pacing, not synchronisation: at most about 60 records a second, a rate both members
        // outrun even on a loaded 2-core machine (unpaced, the producer outran them and the
        // shadow's lag never came within --max-lag).
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    // The reader: the stable view's total, in a loop, each read its own statement.
    const reader = new pg.Client({ connectionString: db.url });
    await reader.connect();
    onTestFinished(() => reader.end());
    const seen: number[] = [];
    let reading = true;
    const reads = (async () => {
      while (reading) {
        const r = await reader.query<{ n: string | null }>(
          `SELECT sum(sales)::text AS n FROM "${name}".totals`,
        );
        seen.push(Number(r.rows[0]?.n ?? 0));
        // Pacing, not synchronisation: about 50 reads a second spare the shared CPU.
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();

    // If the test fails early, stop both loops before the database and topic go.
    onTestFinished(async () => {
      producing = false;
      reading = false;
      await Promise.allSettled([producer, reads]);
    });

    // Version 2 is created by the code that will run it: its migrations are the changed ones.
    await bg.createVersion(variant.env);
    bg.run(["--version", "2"], variant.env);
    await waitFor(
      "version 2 to be promoted",
      async () => {
        const r = await bg.cli(
          [
            "promote",
            "--projection",
            name,
            "--version",
            "2",
            "--max-lag",
            "30",
            "--wait-ms",
            "20000",
            ...variant.promoteFlags,
          ],
          variant.env,
        );
        if (r.code === 0) return true;
        // Refused only while catching up or between equal positions; anything else fails the test.
        // (waitFor retries on a throw and names the last one when it times out.)
        expect(r.stderr).toMatch(/has not caught up|not at the same checkpoints/);
        throw new Error(`promote refused: ${r.stderr.trim()}`);
      },
      150_000,
      500,
    );
    const afterPromote = produced;
    await waitFor("a few more sends after the switch", () =>
      produced >= afterPromote + 9 ? true : undefined,
    );
    producing = false;
    await producer;
    await bg.waitForCaughtUp(1);
    await bg.waitForCaughtUp(2);
    reading = false;
    await reads;

    expect(await bg.states()).toEqual([
      [1, "retired"],
      [2, "live"],
    ]);
    expect(seen.length).toBeGreaterThan(10);
    expect(Math.min(...seen)).toBeGreaterThanOrEqual(first);
    const expectedCents = Array.from({ length: produced }, (_, i) => 100 + i).reduce((a, b) => a + b, 0);
    const totals = async (schema: string) =>
      (
        await db.pool.query<{ sales: string; cents: string }>(
          `SELECT sum(sales)::text AS sales, sum(cents)::text AS cents FROM "${schema}".totals`,
        )
      ).rows[0];
    // Each version equals its own code's computation over every record produced; readers see version 2.
    expect(await totals(`${name}_v1`)).toEqual({ sales: String(produced), cents: String(expectedCents) });
    const v2 = { sales: String(produced), cents: String(expectedCents * variant.centsFactor) };
    expect(await totals(`${name}_v2`)).toEqual(v2);
    expect(await totals(name)).toEqual(v2);
    if (variant.name === "changed") {
      // The stable view shows the new version's new column on every row.
      const notes = await db.pool.query<{ note: string }>(`SELECT DISTINCT note FROM "${name}".totals`);
      expect(notes.rows).toEqual([{ note: "changed" }]);
    }
  }, 600_000);
});
