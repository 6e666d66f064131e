/** The one transaction helper's rollback behaviour, with a client that records what it is sent. */
import type pg from "pg";
import { describe, expect, it } from "vitest";
import { withTransaction } from "../../../src/db/withTransaction.js";

/** A client that records every statement and fails the one that `fails` matches. */
function recordingClient(fails: (sql: string) => Error | undefined) {
  const sent: string[] = [];
  const client = {
    query(sql: string) {
      sent.push(sql);
      const error = fails(sql);
      return error === undefined ? Promise.resolve({ rows: [] }) : Promise.reject(error);
    },
  } as unknown as pg.ClientBase;
  return { client, sent };
}

describe("withTransaction", () => {
  it("rolls back after a failed statement and rethrows its error", async () => {
    const failure = new Error("duplicate key");
    const { client, sent } = recordingClient((sql) => (sql === "work" ? failure : undefined));
    await expect(withTransaction(client, () => client.query("work"))).rejects.toBe(failure);
    expect(sent).toEqual(["BEGIN ISOLATION LEVEL READ COMMITTED", "work", "ROLLBACK"]);
  });

  it("sends no ROLLBACK after a client-side query timeout: it would wait behind the unanswered query", async () => {
    const timeout = new Error("Query read timeout");
    const { client, sent } = recordingClient((sql) => (sql === "work" ? timeout : undefined));
    await expect(withTransaction(client, () => client.query("work"))).rejects.toBe(timeout);
    expect(sent).toEqual(["BEGIN ISOLATION LEVEL READ COMMITTED", "work"]);
  });
});
