/**
 * `replayable dead-letters list|show|retry|discard` run as a user runs them, in a subprocess,
 * against dead letters a real consumer wrote.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClusterAdmin } from "../../../src/kafka/admin.js";
import { produceRecords } from "../../../src/kafka/producer.js";
import { applyBatch } from "../../../src/engine/applyBatch.js";
import { createLogger } from "../../../src/logger.js";
import { ledgerProjection } from "../../../src/projections/ledger/ledgerProjection.js";
import { readRebuildEpoch } from "../../../src/sql/lockCheckpoint.js";
import { runCli, startCli } from "../../helpers/process.js";
import {
  createTestDatabase,
  testAdmin,
  testKafka,
  uniqueName,
  waitForCaughtUp,
  type TestDatabase,
} from "../../helpers/stack.js";

let db: TestDatabase;
let admin: ClusterAdmin;
let topic: string;
const ids: Record<"notJson" | "tooLarge" | "binary" | "zero", string> = {
  notJson: "",
  tooLarge: "",
  binary: "",
  zero: "",
};
const binary = Buffer.from([0xde, 0xad, 0xbe, 0xef, 0x00, 0xff]);

function ce(id: string): Record<string, string> {
  return { ce_specversion: "1.0", ce_id: id, ce_type: "ledger.account.credited" };
}

beforeAll(async () => {
  db = await createTestDatabase();
  admin = await testAdmin();
  topic = uniqueName("dl-cli");
  await admin.createTopic(topic, 1);
  await produceRecords(testKafka(), topic, [
    { key: "acc-1", value: JSON.stringify({ account: "acc-1", amount: 10 }), headers: ce(`${topic}-1`) },
    { key: "acc-1", value: '{"account":', headers: ce(`${topic}-2`) },
    {
      key: "acc-2",
      value: JSON.stringify({ account: "acc-2", amount: 5, pad: "p".repeat(3000) }),
      headers: ce(`${topic}-3`),
    },
    { key: binary, value: binary, headers: { ...ce(`${topic}-4`), trace: binary } },
    { key: "acc-3", value: JSON.stringify({ account: "acc-3", amount: 0 }), headers: ce(`${topic}-5`) },
  ]);
  const group = uniqueName("g");
  const consumer = startCli(
    [
      "run",
      "--projection",
      "ledger",
      "--topic",
      topic,
      "--group",
      group,
      "--database-url",
      db.url,
      "--no-migrate",
    ],
    { REPLAYABLE_MAX_RECORD_BYTES: "2000" },
  );
  await waitForCaughtUp(admin, group, topic);
  consumer.child.kill("SIGTERM");
  await consumer.exited;
  const rows = await db.pool.query<{ id: string; offset: string }>(
    `SELECT id, "offset" FROM replayable.dead_letters ORDER BY "offset"`,
  );
  expect(rows.rows.map((r) => r.offset)).toEqual(["1", "2", "3", "4"]);
  [ids.notJson, ids.tooLarge, ids.binary, ids.zero] = rows.rows.map((r) => r.id) as [
    string,
    string,
    string,
    string,
  ];
});

afterAll(async () => {
  await admin?.close();
  await db?.drop();
});

function cli(...args: string[]) {
  return runCli(["dead-letters", ...args, "--database-url", db.url]);
}

async function balance(account: string): Promise<string | undefined> {
  const r = await db.pool.query<{ balance_cents: string }>(
    "SELECT balance_cents FROM ledger.ledger_accounts WHERE account_id = $1",
    [account],
  );
  return r.rows[0]?.balance_cents;
}

describe("dead-letters", () => {
  it("list prints a table of the unresolved dead letters, by id", async () => {
    const result = await cli("list", "--topic", topic);
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(
      /^id\s+topic\s+partition\s+offset\s+code\s+attempts\s+created\s+state\s+message$/,
    );
    expect(lines.slice(1).map((l) => l.split(/\s+/)[4])).toEqual([
      "DECODE_FAILED",
      "RECORD_TOO_LARGE",
      "DECODE_FAILED",
      "DECODE_FAILED",
    ]);
    expect(lines[2]).toContain("over REPLAYABLE_MAX_RECORD_BYTES=2000");
  });

  it("list filters by code, partition and time, and prints JSON", async () => {
    const json = await cli(
      "list",
      "--code",
      "RECORD_TOO_LARGE",
      "--partition",
      "0",
      "--since",
      "1h",
      "--output",
      "json",
    );
    expect(json.code).toBe(0);
    const letters = JSON.parse(json.stdout) as { id: string; offset: string; error: { code: string } }[];
    expect(letters.map((l) => [l.id, l.offset, l.error.code])).toEqual([
      [ids.tooLarge, "2", "RECORD_TOO_LARGE"],
    ]);
    expect((await cli("list", "--until", "2000-01-01")).stdout).toBe("(no rows)\n");
    expect((await cli("list", "--partition", "1")).stdout).toBe("(no rows)\n");
  });

  it("regression: a repeated --code selects the dead letters of every code given (it kept only the last)", async () => {
    for (const args of [
      ["--code", "RECORD_TOO_LARGE", "--code", "DECODE_FAILED"],
      ["--code", "RECORD_TOO_LARGE", "DECODE_FAILED"],
    ]) {
      const json = await cli("list", ...args, "--output", "json");
      expect(json.code, json.stderr).toBe(0);
      const letters = JSON.parse(json.stdout) as { id: string; error: { code: string } }[];
      expect(
        letters.map((l) => [l.id, l.error.code]),
        args.join(" "),
      ).toEqual([
        [ids.notJson, "DECODE_FAILED"],
        [ids.tooLarge, "RECORD_TOO_LARGE"],
        [ids.binary, "DECODE_FAILED"],
        [ids.zero, "DECODE_FAILED"],
      ]);
    }
    const typo = await cli("list", "--code", "RECORD_TOO_LARGE", "--code", "DECODE_FAIL");
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('replayable: --code: "DECODE_FAIL" is not an error code');
  });

  it("list refuses a bad time, naming the flag and what is valid", async () => {
    const result = await cli("list", "--since", "yesterday");
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      'replayable: --since: "yesterday" is not a time; give an ISO-8601 date-time such as 2026-01-31T12:00:00Z, or a duration back from now such as 90s, 15m, 2h or 7d',
    );
  });

  it("regression: list, retry and discard refuse a --code that is no error code, naming the codes (it selected nothing, exit 0)", async () => {
    for (const sub of ["list", "retry", "discard"]) {
      const result = await cli(sub, "--code", "DECODE_FAIL");
      expect(result.code, sub).toBe(2);
      expect(result.stderr, sub).toContain(
        'replayable: --code: "DECODE_FAIL" is not an error code; dead letters carry DECODE_FAILED, EVENT_ID_MISSING, EVENT_ID_REUSED, RECORD_TOO_LARGE, RECORD_TOO_MANY_HEADERS, DATABASE_LIMIT_EXCEEDED or APPLY_REJECTED',
      );
    }
  });

  it("regression: list, retry and discard take a code no error code has when a dead letter of the projection carries it (a projection's own PermanentRecordError; break-it review)", async () => {
    const custom = await db.pool.query<{ id: string }>(
      `INSERT INTO replayable.dead_letters (projection, topic, partition, "offset", record_timestamp, key, value, headers, error_code, error_message)
       SELECT projection, topic, partition, "offset" + 1000, record_timestamp, key, value, headers, 'AMOUNT_NEGATIVE', 'amount below 0'
         FROM replayable.dead_letters WHERE id = $1 RETURNING id`,
      [ids.binary],
    );
    const id = custom.rows[0]!.id;
    try {
      const listed = await cli("list", "--code", "AMOUNT_NEGATIVE", "--output", "json");
      expect(listed.code, listed.stderr).toBe(0);
      expect((JSON.parse(listed.stdout) as { id: string }[]).map((l) => l.id)).toEqual([id]);
      for (const sub of ["retry", "discard"]) {
        const dry = await cli(sub, "--code", "AMOUNT_NEGATIVE");
        expect(dry.code, `${sub}: ${dry.stderr}`).toBe(0);
        expect(dry.stdout, sub).toContain(id);
      }
    } finally {
      await db.pool.query("DELETE FROM replayable.dead_letters WHERE id = $1", [id]);
    }
  });

  it("show prints the key and value as UTF-8 when valid, else base64, and the headers", async () => {
    const text = await cli("show", ids.binary);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`dead letter ${ids.binary} (projection ledger)`);
    expect(text.stdout).toContain(`  record      ${topic}/0@3`);
    expect(text.stdout).toContain(`  key         (base64, 6 bytes) ${binary.toString("base64")}`);
    expect(text.stdout).toContain(`  value       (base64, 6 bytes) ${binary.toString("base64")}`);
    expect(text.stdout).toContain(`    ce_id: (utf8, ${`${topic}-4`.length} bytes) "${topic}-4"`);
    expect(text.stdout).toContain(`    trace: (base64, 6 bytes) ${binary.toString("base64")}`);

    const json = JSON.parse((await cli("show", ids.notJson, "--output", "json")).stdout) as {
      key: { encoding: string; data: string };
      value: { encoding: string; data: string };
      error: { code: string; message: string };
    };
    expect(json.key).toEqual({ encoding: "utf8", data: "acc-1", bytes: 5 });
    expect(json.value).toEqual({ encoding: "utf8", data: '{"account":', bytes: 11 });
    expect(json.error.code).toBe("DECODE_FAILED");
  });

  it("show of an unknown id exits 1 with a clear message", async () => {
    const result = await cli("show", "999999");
    expect(result.code).toBe(1);
    expect(result.stderr).toBe("replayable: no dead letter with id 999999\n");
  });

  it("show takes --projection as list, retry and discard do: the letter of that projection only", async () => {
    const own = await cli("show", ids.binary, "--projection", "ledger");
    expect(own.code, own.stderr).toBe(0);
    expect(own.stdout).toContain(`dead letter ${ids.binary} (projection ledger)`);
    const other = await cli("show", ids.binary, "--projection", "github");
    expect(other.code).toBe(1);
    expect(other.stderr).toBe(`replayable: no dead letter with id ${ids.binary} of projection github\n`);
  });

  it("regression: ids are whole numbers from 1, leading zeros of any length allowed (0 passed as an id, and 20 digits with leading zeros were refused; review finding)", async () => {
    for (const args of [
      ["list", "--id", "0"],
      ["retry", "--id", "0"],
      ["show", "0"],
    ]) {
      const refused = await cli(...args);
      expect(refused.code, args.join(" ")).toBe(2);
      expect(refused.stderr).toContain('"0" is not a dead letter id; ids are whole numbers from 1');
    }
    const padded = ids.binary.padStart(20, "0");
    const shown = await cli("show", padded);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`dead letter ${ids.binary} (projection ledger)`);
    const listed = await cli("list", "--id", padded, "--state", "all", "--output", "json");
    expect((JSON.parse(listed.stdout) as { id: string }[]).map((l) => l.id)).toEqual([ids.binary]);
  });

  it("regression: show --projection P finds a letter of one of P's versions (stored under P@vN; it said there was none; review finding)", async () => {
    const inserted = await db.pool.query<{ id: string }>(
      `INSERT INTO replayable.dead_letters (projection, topic, partition, "offset", error_code, error_message)
       VALUES ('sales@v2', 'sales-events', 0, 5, 'DECODE_FAILED', 'bad') RETURNING id`,
    );
    const id = inserted.rows[0]!.id;
    const own = await cli("show", id, "--projection", "sales");
    expect(own.code, own.stderr).toBe(0);
    expect(own.stdout).toContain(`dead letter ${id} (projection sales@v2)`);
    expect((await cli("show", id, "--projection", "sales@v2")).code).toBe(0);
    const other = await cli("show", id, "--projection", "sale");
    expect(other.code).toBe(1);
    expect(other.stderr).toBe(`replayable: no dead letter with id ${id} of projection sale\n`);
    await db.pool.query("DELETE FROM replayable.dead_letters WHERE id = $1", [id]);
  });

  it("retry is a dry run without --execute and changes nothing", async () => {
    const result = await cli("retry", "--code", "RECORD_TOO_LARGE");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("dry run: would retry 1 dead letter; add --execute to do it");
    const row = await db.pool.query(
      "SELECT attempts, resolved_at FROM replayable.dead_letters WHERE id = $1",
      [ids.tooLarge],
    );
    expect(row.rows[0]).toEqual({ attempts: 1, resolved_at: null });
  });

  it("retry --execute applies a record that now succeeds once and resolves it", async () => {
    const result = await runCli(
      [
        "dead-letters",
        "retry",
        "--projection",
        "ledger",
        "--id",
        ids.tooLarge,
        "--execute",
        "--database-url",
        db.url,
      ],
      { REPLAYABLE_MAX_RECORD_BYTES: "100000" },
    );
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^${ids.tooLarge}\\s+${topic}/0@2\\s+applied; resolved$`, "m"));
    expect(result.stdout).toContain("applied; resolved");
    expect(result.stdout).toContain(
      "1 dead letters, 1 retried: 1 applied, 0 duplicate, 0 failed again; 0 superseded by a rebuild, 0 not retried after later records, 0 already resolved",
    );
    expect(await balance("acc-2")).toBe("5");
    // Once: a second retry finds it resolved.
    const again = await runCli(
      ["dead-letters", "retry", "--id", ids.tooLarge, "--execute", "--database-url", db.url],
      { REPLAYABLE_MAX_RECORD_BYTES: "100000" },
    );
    expect(again.stdout).toContain("0 dead letters, 0 retried:");
    expect(await balance("acc-2")).toBe("5");
    const resolved = JSON.parse((await cli("list", "--state", "resolved", "--output", "json")).stdout) as {
      id: string;
      state: string;
      attempts: number;
      resolvedBy: string;
    }[];
    expect(resolved.map((r) => [r.id, r.state, r.attempts])).toEqual([[ids.tooLarge, "applied", 2]]);
    expect(resolved[0]!.resolvedBy).toMatch(/.+@.+/);
  });

  it("retry --execute of a record that fails again counts the attempt and exits 1", async () => {
    const result = await cli("retry", "--id", ids.zero, "--execute");
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(
      "failed again: DECODE_FAILED: field amount must be a positive whole number",
    );
    expect(result.stderr).toContain("replayable: 1 of 1 dead letters failed again");
    const row = await db.pool.query(
      "SELECT attempts, resolved_at FROM replayable.dead_letters WHERE id = $1",
      [ids.zero],
    );
    expect(row.rows[0]).toMatchObject({ attempts: 2, resolved_at: null });
  });

  it("discard marks resolved as discarded and keeps the bytes; --delete-bytes removes them", async () => {
    const dry = await cli("discard", "--id", ids.notJson);
    expect(dry.stdout).toContain("dry run: would discard 1 dead letter; add --execute to do it");
    const kept = await cli("discard", "--id", ids.notJson, "--execute");
    expect(kept.code).toBe(0);
    expect(kept.stdout).toBe("discarded 1 dead letter; their bytes stay in replayable.dead_letters\n");
    const deleted = await cli("discard", "--id", ids.binary, "--execute", "--delete-bytes");
    expect(deleted.stdout).toBe("discarded 1 dead letter and deleted their bytes\n");
    const rows = await db.pool.query<{ id: string; resolution: string; value: Buffer | null }>(
      "SELECT id, resolution, value FROM replayable.dead_letters WHERE id = ANY($1::bigint[]) ORDER BY id",
      [[ids.notJson, ids.binary]],
    );
    expect(rows.rows).toEqual([
      { id: ids.notJson, resolution: "discarded", value: Buffer.from('{"account":') },
      { id: ids.binary, resolution: "discarded", value: null },
    ]);
    expect((await cli("show", ids.binary)).stdout).toMatch(/ {2}bytes {7}deleted at /);
    // Nothing left to retry but the zero amount.
    const left = JSON.parse((await cli("list", "--output", "json")).stdout) as { id: string }[];
    expect(left.map((l) => l.id)).toEqual([ids.zero]);
  });
});

describe("dead-letters retry stopped part-way", () => {
  it("regression: an error on one letter stops the retry, which still prints what it did before (committed, each in its transaction) and what it did not try (it printed only the error; review finding)", async () => {
    const stopTopic = uniqueName("dl-stop");
    const credit = (offset: number, account: string) => ({
      topic: stopTopic,
      partition: 0,
      offset: String(offset),
      timestamp: "1767225600000",
      key: Buffer.from(account),
      value: Buffer.from(JSON.stringify({ account, amount: 7, pad: "p".repeat(300) })),
      headers: {
        ce_specversion: [Buffer.from("1.0")],
        ce_id: [Buffer.from(`${stopTopic}-${offset}`)],
        ce_type: [Buffer.from("ledger.account.credited")],
      },
    });
    const accounts = [uniqueName("acc"), uniqueName("acc"), uniqueName("acc")];
    const client = await db.pool.connect();
    let letters: string[];
    try {
      const result = await applyBatch({
        client,
        projection: ledgerProjection,
        topic: stopTopic,
        partition: 0,
        records: accounts.map((a, i) => credit(i, a)),
        maxRecordBytes: 100,
        rebuildEpoch: await readRebuildEpoch(client, "ledger"),
        log: createLogger("silent"),
      });
      letters = result.deadLettered.map((d) => d.id);
    } finally {
      client.release();
    }
    expect(letters).toHaveLength(3);
    // Another session holds the second account's row: that letter's retry times out on its lock.
    /** Runs `args` while another session holds an uncommitted row of the second account. */
    const whileHeld = async (args: string[]) => {
      const holder = await db.pool.connect();
      try {
        await holder.query("BEGIN");
        await holder.query("INSERT INTO ledger.ledger_accounts (account_id, balance_cents) VALUES ($1, 0)", [
          accounts[1],
        ]);
        return await runCli(args, { DATABASE_URL: db.url, REPLAYABLE_LOCK_TIMEOUT_MS: "1000" });
      } finally {
        await holder.query("ROLLBACK");
        holder.release();
      }
    };
    {
      const result = await whileHeld([
        "dead-letters",
        "retry",
        "--projection",
        "ledger",
        "--topic",
        stopTopic,
        "--execute",
        "--output",
        "json",
      ]);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("lock timeout");
      const printed = JSON.parse(result.stdout) as {
        letters: number;
        retried: number;
        results: { id: string; kind: string }[];
        stopped: { id: string; error: string };
        notTried: string[];
      };
      expect(printed.letters).toBe(3);
      expect(printed.results).toEqual([{ id: letters[0], kind: "applied" }]);
      expect(printed.stopped).toMatchObject({ id: letters[1] });
      expect(printed.stopped.error).toContain("lock timeout");
      expect(printed.notTried).toEqual([letters[2]]);
    }
    expect(await balance(accounts[0]!)).toBe("7");
    expect(await balance(accounts[1]!)).toBeUndefined();
    // The table output says the same (letter 0 is resolved now: 1 stops the retry, 2 is not tried).
    {
      const result = await whileHeld([
        "dead-letters",
        "retry",
        "--projection",
        "ledger",
        "--topic",
        stopTopic,
        "--execute",
      ]);
      expect(result.code).toBe(1);
      expect(result.stdout).toMatch(
        new RegExp(`^${letters[1]}\\s+${stopTopic}/0@1\\s+stopped: .*lock timeout.*$`, "m"),
      );
      expect(result.stdout).toMatch(new RegExp(`^${letters[2]}\\s+${stopTopic}/0@2\\s+not tried$`, "m"));
      expect(result.stderr).toContain(`replayable: the retry stopped at dead letter ${letters[1]}`);
    }
  });
});

describe("dead-letters after a rebuild", () => {
  it("regression: retry and discard of an id that is no dead letter exit 1 (NOT_FOUND), changing nothing; an id already resolved is said (break-it review)", async () => {
    const before = await db.pool.query("SELECT * FROM replayable.dead_letters ORDER BY id");
    const retried = await cli("retry", "--id", "9223372036854775807", "--execute");
    expect(retried.stderr).toContain("no dead letter with id 9223372036854775807 of projection ledger");
    expect(retried.code).toBe(1);
    const discarded = await cli("discard", "--id", ids.zero, "--id", "999999", "--execute");
    expect(discarded.stderr).toContain("no dead letter with id 999999 of projection ledger");
    expect(discarded.code).toBe(1);
    expect((await db.pool.query("SELECT * FROM replayable.dead_letters ORDER BY id")).rows).toEqual(
      before.rows,
    );
    // Discarded by the test before: said, and left as it is.
    const resolved = await cli("retry", "--id", ids.notJson);
    expect(resolved.code, resolved.stderr).toBe(0);
    expect(resolved.stderr).toContain(`dead letter ${ids.notJson} is already resolved (discarded)`);
    // A bigint id of 19 digits is an id, not a malformed one.
    const shown = await cli("show", "1000000000000000000");
    expect(shown.stderr).toContain("no dead letter with id 1000000000000000000");
    expect(shown.code).toBe(1);
    expect((await cli("show", "9223372036854775808")).code).toBe(2);
  });

  it("`dead-letters retry` after a rebuild applies a record twice: the rebuild resolves the letters of the records it hands back", async () => {
    const own = await createTestDatabase();
    try {
      const t = uniqueName("dl-rebuild");
      const group = uniqueName("g");
      await admin.createTopic(t, 1);
      await produceRecords(testKafka(), t, [
        {
          key: "acc-r",
          value: JSON.stringify({ account: "acc-r", amount: 5, pad: "p".repeat(3000) }),
          headers: ce(`${t}-1`),
        },
        { key: "acc-r", value: JSON.stringify({ account: "acc-r", amount: 1 }), headers: ce(`${t}-2`) },
        { key: "acc-r", value: JSON.stringify({ account: "acc-r", amount: 0 }), headers: ce(`${t}-3`) },
      ]);
      const runUntilCaughtUp = async (maxRecordBytes: string) => {
        const consumer = startCli(
          [
            "run",
            "--projection",
            "ledger",
            "--topic",
            t,
            "--group",
            group,
            "--database-url",
            own.url,
            "--no-migrate",
          ],
          { REPLAYABLE_MAX_RECORD_BYTES: maxRecordBytes },
        );
        await waitForCaughtUp(admin, group, t);
        consumer.child.kill("SIGTERM");
        await consumer.exited;
      };
      const ownBalance = async () =>
        (
          await own.pool.query<{ balance_cents: string }>(
            "SELECT balance_cents FROM ledger.ledger_accounts WHERE account_id = 'acc-r'",
          )
        ).rows[0]?.balance_cents;
      const deadLetters = (...args: string[]) =>
        runCli(["dead-letters", ...args, "--database-url", own.url], {
          REPLAYABLE_MAX_RECORD_BYTES: "100000",
        });

      await runUntilCaughtUp("2000");
      expect(await ownBalance()).toBe("1");
      const before = JSON.parse((await deadLetters("list", "--output", "json")).stdout) as {
        id: string;
        offset: string;
      }[];
      expect(before.map((l) => l.offset)).toEqual(["0", "2"]);

      // The cause is fixed (a larger limit); the projection is rebuilt and the log applied again.
      const rebuilt = await runCli([
        "rebuild",
        "--projection",
        "ledger",
        "--group",
        group,
        "--topic",
        t,
        "--execute",
        "--database-url",
        own.url,
      ]);
      expect(rebuilt.code, rebuilt.stderr).toBe(0);
      expect(rebuilt.stdout).toContain(
        "2 unresolved dead letters of the records it hands back resolved as superseded",
      );
      await runUntilCaughtUp("100000");
      expect(await ownBalance()).toBe("6");

      // The zero amount failed again in the rebuilt state: a letter of its own, the only one to retry.
      const after = JSON.parse((await deadLetters("list", "--output", "json")).stdout) as {
        id: string;
        offset: string;
      }[];
      expect(after.map((l) => l.offset)).toEqual(["2"]);
      expect(after[0]!.id).not.toBe(before[1]!.id);
      const retried = await deadLetters("retry", "--execute");
      expect(retried.code).toBe(1);
      expect(retried.stdout).toContain("1 dead letters, 1 retried: 0 applied, 0 duplicate, 1 failed again;");
      expect(await ownBalance()).toBe("6");
      const resolved = JSON.parse(
        (await deadLetters("list", "--state", "resolved", "--output", "json")).stdout,
      ) as { id: string; state: string; resolvedBy: string }[];
      expect(resolved.map((r) => [r.id, r.state])).toEqual(before.map((l) => [l.id, "superseded"]));
      expect(resolved[0]!.resolvedBy).toMatch(/ \(rebuild 1\)$/);
    } finally {
      await own.drop();
    }
  });
});
