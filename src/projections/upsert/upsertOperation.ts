/**
 * What one record asks of an upsert sink's table, decoded from its bytes: write a row (insert or
 * upsert, as the declaration's mode says) or delete the row of a key (a tombstone). Every problem is
 * a PermanentRecordError naming the field, header or key, so the engine dead-letters the record
 * with its bytes (docs/design.md "dead letter").
 */
import { PermanentRecordError } from "../../errors.js";
import { headerValues, type KafkaRecord } from "../../record.js";
import { isUtf8 } from "../../engine/dedupeKeys.js";
import {
  exactNumbers,
  fromJson,
  fromText,
  mayHoldInexactNumber,
  type Converted,
  type FieldType,
} from "./fieldTypes.js";
import type { UpsertKeyPart, UpsertProjectionSpec } from "./upsertProjectionSpec.js";

/**
 * One record's effect. `key` holds the key parts' texts in the order of the declaration's key;
 * `values` the mapped columns' texts (null = SQL NULL) in the order of its `columns`. Texts are
 * what PostgreSQL's input function of each declared type reads.
 */
export type UpsertOperation =
  | { readonly kind: "write"; readonly key: readonly string[]; readonly values: readonly (string | null)[] }
  | { readonly kind: "delete"; readonly key: readonly string[] };

/** A mapped column of a declaration: column name, the JSON field it reads, its type. */
export interface MappedColumn {
  readonly column: string;
  readonly field: string;
  readonly type: FieldType;
  readonly required: boolean;
}

/** The declaration's columns in order, each with its field (default: the column's name). */
export function mappedColumns(spec: UpsertProjectionSpec): MappedColumn[] {
  return Object.entries(spec.columns).map(([column, c]) => ({
    column,
    field: c.field ?? column,
    type: c.type,
    required: c.required,
  }));
}

/**
 * Returns the decoder of `spec`: a pure function from a record to its {@link UpsertOperation}.
 * - a null value (a tombstone) is a delete with `deleteOnTombstone`, else a dead letter;
 * - any other value must be a UTF-8 JSON object; each key part must be present and valid, each
 *   mapped field valid for its type (absent or null = SQL NULL unless `required`).
 * @throws PermanentRecordError DECODE_FAILED naming the field, header or key and what is valid.
 */
export function upsertDecoder(spec: UpsertProjectionSpec): (record: KafkaRecord) => UpsertOperation {
  const columns = mappedColumns(spec);
  // A json/jsonb column keeps every number as sent; the number types need the text of those a
  // double cannot hold (the reviver costs about 4 µs a record, so only when the text has one).
  const everyNumber = columns.some((c) => c.type === "json" || c.type === "jsonb");
  return (record) => {
    if (record.value === null) {
      if (!spec.deleteOnTombstone) {
        throw invalid(
          `value is null (a tombstone) and deleteOnTombstone is off, so there is nothing to write; set deleteOnTombstone: true to delete the row of its key`,
        );
      }
      return { kind: "delete", key: spec.key.map((part) => keyText(record, part, undefined)) };
    }
    const fields = jsonObject(record.value, "value", everyNumber);
    const key = spec.key.map((part) => keyText(record, part, fields));
    const values = columns.map(({ column, field, type, required }) => {
      if (!Object.hasOwn(fields, field) || fields[field] === null) {
        if (required) throw invalid(`field ${JSON.stringify(field)} (column ${column}) is missing or null`);
        return null;
      }
      const value = fields[field];
      return converted(
        fromJson(type, value),
        `field ${JSON.stringify(field)} (column ${column}, ${type})`,
        value,
      );
    });
    return { kind: "write", key, values };
  };
}

/** The text of one key part; `fields` is the value's JSON object (undefined for a tombstone). */
function keyText(
  record: KafkaRecord,
  part: UpsertKeyPart,
  fields: Record<string, unknown> | undefined,
): string {
  const what = `key column ${part.column}`;
  let result: Converted;
  let raw: unknown;
  let where: string;
  switch (part.from) {
    case "record-key": {
      if (record.key === null)
        throw invalid(`the record has no key (null); ${what} comes from the record key`);
      if (part.name === undefined) {
        if (!isUtf8(record.key)) throw invalid(`the record key is not valid UTF-8; ${what} comes from it`);
        raw = record.key.toString("utf8");
        where = `the record key (${what}, ${part.type})`;
        result = fromText(part.type, raw as string);
      } else {
        const keyFields = jsonObject(record.key, "record key", false);
        raw = keyFields[part.name];
        where = `field ${JSON.stringify(part.name)} of the record key (${what}, ${part.type})`;
        if (raw === undefined || raw === null) throw invalid(`${where} is missing or null`);
        result = fromJson(part.type, raw);
      }
      break;
    }
    case "header": {
      const name = part.name!;
      where = `header ${JSON.stringify(name)} (${what}, ${part.type})`;
      const bytes = headerValues(record, name)[0];
      if (bytes === undefined) throw invalid(`${where} is missing`);
      if (bytes === null) throw invalid(`${where} is null`);
      if (!isUtf8(bytes)) throw invalid(`${where} is not valid UTF-8`);
      raw = bytes.toString("utf8");
      result = fromText(part.type, raw as string);
      break;
    }
    case "field": {
      const name = part.name!;
      where = `key field ${JSON.stringify(name)} (${what}, ${part.type})`;
      raw = fields?.[name];
      if (raw === undefined || raw === null) throw invalid(`${where} is missing or null`);
      result = fromJson(part.type, raw);
      break;
    }
  }
  const text = converted(result, where, raw);
  if (text === null) throw invalid(`${where} is null`);
  return text;
}

function converted(result: Converted, where: string, value: unknown): string | null {
  if (result.ok) return result.text;
  throw invalid(`${where} must be ${result.expected}, got ${shown(value)}`);
}

/**
 * Parses `bytes` as a UTF-8 JSON object, through {@link exactNumbers} when `everyNumber` is set
 * or the text may hold a number a double cannot hold ({@link mayHoldInexactNumber}).
 */
function jsonObject(
  bytes: Buffer,
  what: "value" | "record key",
  everyNumber: boolean,
): Record<string, unknown> {
  if (!isUtf8(bytes)) throw invalid(`${what} is not valid UTF-8`);
  let parsed: unknown;
  try {
    const text = bytes.toString("utf8");
    const reviver = everyNumber || mayHoldInexactNumber(text) ? exactNumbers : undefined;
    parsed = JSON.parse(text, reviver as Parameters<typeof JSON.parse>[1]);
  } catch (error) {
    // The reviver recurses per level: a value nested thousands deep overflows the stack.
    if (error instanceof RangeError) throw invalid(`${what} is nested too deep to read (${error.message})`);
    throw invalid(`${what} is not JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw invalid(`${what} must be a JSON object, got ${shown(parsed)}`);
  return parsed as Record<string, unknown>;
}

/** A value as JSON, at most 100 characters; a value nested too deep for JSON.stringify is described. */
function shown(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    // RangeError: a record's JSON nested thousands deep overflows the stack (issue 26 fuzz test).
    return Array.isArray(value)
      ? "a JSON array nested too deep to show"
      : "a JSON value nested too deep to show";
  }
  return text.length > 100 ? `${text.slice(0, 99)}…` : text;
}

function invalid(message: string): PermanentRecordError {
  return new PermanentRecordError("DECODE_FAILED", message);
}
