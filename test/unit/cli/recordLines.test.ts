import { describe, expect, it } from "vitest";
import { parseRecordLines } from "../../../src/cli/recordLines.js";

describe("the records file of `produce --topic T --file F`", () => {
  it("reads key, value and headers per line: a string value as it is, other JSON as its text, null as a tombstone", () => {
    const file = [
      '{"key":"o-1","value":{"id":"o-1","amountCents":1250},"headers":{"ce_id":"1"}}',
      "",
      '{"value":"plain text"}',
      '{"key":"o-1","value":null}',
    ].join("\n");
    expect(parseRecordLines(file, "records.jsonl")).toEqual([
      { key: "o-1", value: '{"id":"o-1","amountCents":1250}', headers: { ce_id: "1" } },
      { key: null, value: "plain text" },
      { key: "o-1", value: null },
    ]);
  });

  it("refuses a bad line naming the file, the line and the format", () => {
    const cases: [string, string][] = [
      ["not json", "records.jsonl line 2: not JSON ("],
      ["[1]", "records.jsonl line 2: not a JSON object"],
      ['{"key":1,"value":"v"}', 'records.jsonl line 2: "key" must be a string or null'],
      ['{"value":"v","headers":{"n":1}}', 'records.jsonl line 2: header "n" must be a string'],
      ['{"value":"v","header":{}}', 'records.jsonl line 2: unknown field "header"'],
    ];
    for (const [line, message] of cases) {
      expect(() => parseRecordLines(`{"value":"ok"}\n${line}\n`, "records.jsonl"), line).toThrow(message);
      expect(() => parseRecordLines(`{"value":"ok"}\n${line}\n`, "records.jsonl"), line).toThrow(
        '{"key": "k", "value": "text" or any JSON, "headers": {"name": "text"}}',
      );
    }
    expect(() => parseRecordLines("\n\n", "empty.jsonl")).toThrow("empty.jsonl: holds no records");
  });

  it("names every bad line at once, the first 20 of them", () => {
    const file = ['{"value":"ok"}', "not json", '{"value":"v","headers":{"n":1}}', '{"key":1}'].join("\n");
    expect(() => parseRecordLines(file, "bad.jsonl")).toThrow(
      /^bad\.jsonl line 2: not JSON \(.*\)\nbad\.jsonl line 3: header "n" must be a string\nbad\.jsonl line 4: "key" must be a string or null\neach line is one record/,
    );
    const many = Array.from({ length: 25 }, () => "x").join("\n");
    expect(() => parseRecordLines(many, "many.jsonl")).toThrow(
      /many\.jsonl line 20: not JSON .*\n\(and 5 more\)\n/,
    );
  });

  it("regression: sends a JSON value as the line's own text, so numbers beyond 2^53 and their notation are kept (it sent JSON.stringify of the parsed value; review finding)", () => {
    const [record] = parseRecordLines(
      '{"key":"k","value":{"id":9007199254740993, "amount":1.50,"n":1e2,"s":"\\u00e9"}}\n',
      "f",
    );
    expect(record!.value).toBe('{"id":9007199254740993, "amount":1.50,"n":1e2,"s":"\\u00e9"}');
    const [array] = parseRecordLines('{"value": [18446744073709551615, true] }', "f");
    expect(array!.value).toBe("[18446744073709551615, true]");
  });

  it("refuses a line that names a field twice (JSON.parse keeps the last, silently)", () => {
    expect(() => parseRecordLines('{"value":{"a":1},"value":{"a":2}}', "f")).toThrow(
      'f line 1: field "value" given twice',
    );
    expect(() => parseRecordLines('{"value":"v","headers":{"a":"1","a":"2"}}', "f")).toThrow(
      'f line 1: header "a" given twice',
    );
    // Inside the value, the text is the producer's to choose: sent as written.
    expect(parseRecordLines('{"value":{"a":1,"a":2}}', "f")[0]!.value).toBe('{"a":1,"a":2}');
  });

  it("refuses a value nested too deeply to find its text (JSON.parse takes it, the parse tree does not), naming the line", () => {
    const deep = `{"value":${"[".repeat(20_000)}${"]".repeat(20_000)}}`;
    expect(() => parseRecordLines(`{"value":"ok"}\n${deep}\n`, "f")).toThrow("f line 2: nested too deeply");
  });
});
