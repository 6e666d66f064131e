/**
 * The ledger's events: CloudEvents 1.0 in binary mode (headers `ce_specversion`, `ce_id`,
 * `ce_source`, `ce_type`; the JSON value is the event data), keyed by account or order id.
 */
import { silentlyAlteredTextReason } from "../../text/text.js";
import { PermanentRecordError } from "../../errors.js";
import { headerText, type KafkaRecord } from "../../record.js";
import { isUtf8 } from "../../engine/dedupeKeys.js";

/** The `ce_type` values the ledger applies. */
export const LEDGER_TYPES = [
  "ledger.account.credited",
  "ledger.account.debited",
  "ledger.order.paid",
  "ledger.order.shipped",
] as const;

/** A decoded ledger event. Amounts are positive whole cents, below 2^53. */
export type LedgerEvent =
  | {
      readonly type: "ledger.account.credited" | "ledger.account.debited";
      readonly account: string;
      readonly amount: number;
    }
  | {
      readonly type: "ledger.order.paid";
      readonly order: string;
      readonly account: string;
      readonly amount: number;
    }
  | { readonly type: "ledger.order.shipped"; readonly order: string; readonly shippedAt: Date };

/**
 * Decodes and validates a ledger record.
 * @throws PermanentRecordError DECODE_FAILED naming the header or field and what is valid.
 */
export function decodeLedgerEvent(record: KafkaRecord): LedgerEvent {
  const specversion = headerText(record, "ce_specversion");
  if (specversion !== "1.0") {
    throw invalid(
      `header ce_specversion is ${JSON.stringify(specversion ?? null)}; CloudEvents binary mode needs "1.0"`,
    );
  }
  const type = headerText(record, "ce_type");
  if (!LEDGER_TYPES.includes(type as (typeof LEDGER_TYPES)[number])) {
    throw invalid(`header ce_type ${JSON.stringify(type ?? null)} is not one of ${LEDGER_TYPES.join(", ")}`);
  }
  if (record.value === null || record.value.length === 0)
    throw invalid("value is empty; expected a JSON object");
  if (!isUtf8(record.value)) throw invalid("value is not valid UTF-8");
  let data: unknown;
  try {
    data = JSON.parse(record.value.toString("utf8"));
  } catch (error) {
    throw invalid(`value is not JSON: ${(error as Error).message}`);
  }
  if (typeof data !== "object" || data === null || Array.isArray(data))
    throw invalid("value must be a JSON object");
  const fields = data as Record<string, unknown>;
  switch (type) {
    case "ledger.account.credited":
    case "ledger.account.debited":
      return { type, account: id(fields, "account"), amount: amount(fields) };
    case "ledger.order.paid":
      return { type, order: id(fields, "order"), account: id(fields, "account"), amount: amount(fields) };
    default: {
      const shippedAt = fields.shipped_at;
      const date = typeof shippedAt === "string" ? new Date(shippedAt) : undefined;
      if (
        date === undefined ||
        Number.isNaN(date.getTime()) ||
        !/^\d{4}-\d{2}-\d{2}T/.test(shippedAt as string)
      ) {
        throw invalid(
          `field shipped_at must be an ISO-8601 date-time string, got ${JSON.stringify(shippedAt ?? null)}`,
        );
      }
      return { type: "ledger.order.shipped", order: id(fields, "order"), shippedAt: date };
    }
  }
}

function id(fields: Record<string, unknown>, name: string): string {
  const value = fields[name];
  if (typeof value !== "string" || value.length === 0 || value.length > 200) {
    throw invalid(
      `field ${name} must be a non-empty string of at most 200 characters, got ${JSON.stringify(value ?? null)}`,
    );
  }
  const unstorable = silentlyAlteredTextReason(value);
  if (unstorable !== undefined) throw invalid(`field ${name} ${unstorable}`);
  return value;
}

function amount(fields: Record<string, unknown>): number {
  const value = fields.amount;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0) {
    throw invalid(
      `field amount must be a positive whole number of cents below 2^53, got ${JSON.stringify(value ?? null)}`,
    );
  }
  return value;
}

function invalid(message: string): PermanentRecordError {
  return new PermanentRecordError("DECODE_FAILED", message);
}
