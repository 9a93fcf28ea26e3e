/**
 * The incremental JSON parser, on the cases of the server's tests/protocol/test_partial_json.py:
 * every prefix of generated documents is accepted and consistent with the final value, any
 * fragmentation gives JSON.parse, early rejection at the first impossible character.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import type { JsonValue } from "../src/events.js";
import { PartialJson, PartialJsonError, parsePartial } from "../src/partial_json.js";
import { Random } from "./random.js";

type Value = JsonValue | undefined;

/** Equal all the way down, keys in order, -0 apart from 0. */
function same(a: Value, b: Value): boolean {
  if (typeof a === "number" && typeof b === "number") return Object.is(a, b);
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => same(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    return ka.length === kb.length && ka.every((k, i) => k === kb[i] && same(a[k], b[k]));
  }
  return a === b;
}

function isObject(x: Value): x is { [key: string]: JsonValue } {
  return x !== null && typeof x === "object" && !Array.isArray(x);
}

/** Whether `prov` can still grow into `fin` (the rules of the Python test's docstring). */
function consistent(prov: Value, fin: Value, top = true): boolean {
  if (prov === undefined) return top;
  if (prov === null || typeof prov === "boolean") return prov === fin;
  if (typeof prov === "number") {
    if (typeof fin !== "number") return false;
    return prov === 0 || fin === 0 || Math.sign(prov) === Math.sign(fin);
  }
  if (typeof prov === "string") return typeof fin === "string" && fin.startsWith(prov);
  if (Array.isArray(prov)) {
    if (!Array.isArray(fin) || prov.length > fin.length) return false;
    if (!prov.slice(0, -1).every((p, i) => same(p, fin[i]))) return false;
    return prov.length === 0 || consistent(prov[prov.length - 1], fin[prov.length - 1], false);
  }
  if (!isObject(fin)) return false;
  const keys = Object.keys(prov);
  const finalKeys = Object.keys(fin).slice(0, keys.length);
  if (keys.some((k, i) => k !== finalKeys[i])) return false;
  if (!keys.slice(0, -1).every((k) => same(prov[k], fin[k]))) return false;
  const last = keys[keys.length - 1];
  return last === undefined || consistent(prov[last], fin[last], false);
}

function feedByChar(text: string): PartialJson {
  const parser = new PartialJson();
  for (const c of text) parser.feed(c);
  return parser;
}

// -- generated documents --------------------------------------------------------------

const NASTY = ['"', "\\", "/", "\x00", "\x01", "\n", "\r", "\t", "\x1f", "\x7f", "\u2028", "\ud83d", "\ude00", "😀", "é", "a", " "];

function randomText(r: Random): string {
  let s = "";
  for (let n = r.int(0, 8); n > 0; n--) s += r.next() < 0.7 ? r.pick(NASTY) : String.fromCharCode(r.int(0, 0xffff));
  return s;
}

function randomValue(r: Random, depth = 0): JsonValue {
  const kind = r.int(0, depth > 3 ? 5 : 7);
  switch (kind) {
    case 0:
      return null;
    case 1:
      return r.next() < 0.5;
    case 2:
      return r.int(-1000, 1000);
    case 3:
      return Number((r.next() * 10 ** r.int(-20, 40) * (r.next() < 0.5 ? -1 : 1)).toPrecision(r.int(1, 17)));
    case 4:
      return r.pick([0, -0, 1e21, 123456789012345678901234567890, 5e-324, 1.5]);
    case 5:
      return randomText(r);
    case 6:
      return Array.from({ length: r.int(0, 4) }, () => randomValue(r, depth + 1));
    default: {
      const object: { [key: string]: JsonValue } = {};
      for (let n = r.int(0, 4); n > 0; n--) object[randomText(r) + String(n)] = randomValue(r, depth + 1);
      return object;
    }
  }
}

/** A serializer with the layouts of Python's json.dumps (separators, indent, ensure_ascii). */
function dumps(value: JsonValue, r: Random): string {
  const [comma, colon] = r.pick([[",", ":"], [", ", ": "], [" ,\n", "\t:  "], ["\r\n,", ":"]] as const);
  const ascii = r.next() < 0.5;
  const str = (s: string): string => {
    const json = JSON.stringify(s);
    return ascii ? json.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`) : json;
  };
  const walk = (v: JsonValue): string => {
    if (typeof v === "string") return str(v);
    if (v === null || typeof v !== "object") return Object.is(v, -0) ? "-0.0" : JSON.stringify(v);
    if (Array.isArray(v)) return `[${v.map(walk).join(comma)}]`;
    return `{${Object.entries(v).map(([k, x]) => str(k) + colon + walk(x)).join(comma)}}`;
  };
  const pad = (): string => r.pick(["", " ", "\n", "\t\r ", "  "]);
  return pad() + walk(value) + pad();
}

describe("generated documents", () => {
  test("every prefix is accepted and consistent with the final value", () => {
    const r = new Random(1);
    for (let n = 0; n < 300; n++) {
      const doc = dumps(randomValue(r), r);
      const fin = JSON.parse(doc) as JsonValue;
      const parser = new PartialJson();
      let previous: Value = undefined;
      assert.equal(parser.value, undefined);
      for (let i = 0; i < doc.length; i++) {
        parser.feed(doc[i] as string);
        const current = parser.value;
        assert.ok(consistent(current, fin), `${JSON.stringify(doc.slice(0, i + 1))} -> ${JSON.stringify(current)}`);
        assert.ok(consistent(previous, current), `${JSON.stringify(doc.slice(0, i + 1))}`);
        if (parser.complete) assert.ok(same(parser.finish(), JSON.parse(doc.slice(0, i + 1)) as JsonValue));
        previous = current;
      }
      assert.ok(parser.complete);
      assert.ok(same(parser.finish(), fin), doc);
      assert.ok(same(parser.value, fin));
      const cut = r.int(0, doc.length);
      assert.ok(same(parsePartial(doc.slice(0, cut)), feedByChar(doc.slice(0, cut)).value));
    }
  });

  test("any fragmentation gives JSON.parse", () => {
    const r = new Random(2);
    for (let n = 0; n < 300; n++) {
      const doc = dumps(randomValue(r), r);
      const cuts = Array.from({ length: r.int(0, 6) }, () => r.int(0, doc.length)).sort((a, b) => a - b);
      const parser = new PartialJson();
      let start = 0;
      for (const end of [...cuts, doc.length]) {
        parser.feed(doc.slice(start, end)); // empty fragments included
        start = end;
      }
      assert.ok(same(parser.finish(), JSON.parse(doc) as JsonValue), doc);
    }
  });

  test("agrees with JSON.parse on text made of JSON's own pieces", () => {
    const tokens = ["{", "}", "[", "]", ",", ":", '"', "\\", "u", "d83d", "dc00", "0", "1", "-", "+", ".", "e", "E", "true", "nul", "l", "a", " ", "\n", "\x01", "'"];
    const r = new Random(3);
    for (let n = 0; n < 3000; n++) {
      const text = Array.from({ length: r.int(0, 25) }, () => r.pick(tokens)).join("");
      let expected: { value: JsonValue } | undefined;
      try {
        expected = { value: JSON.parse(text) as JsonValue };
      } catch {
        expected = undefined;
      }
      const parser = new PartialJson();
      try {
        parser.feed(text);
      } catch (err) {
        assert.ok(err instanceof PartialJsonError);
        assert.equal(expected, undefined, text);
        parsePartial(text.slice(0, err.offset)); // everything before is a possible beginning
        assert.throws(() => parsePartial(text.slice(0, err.offset + 1)), PartialJsonError);
        continue;
      }
      if (expected === undefined) {
        assert.ok(!parser.complete, text);
        assert.throws(() => parser.finish(), PartialJsonError);
      } else {
        assert.ok(same(parser.finish(), expected.value), text);
      }
    }
  });
});

// -- documented semantics ---------------------------------------------------------------

const PROVISIONAL: ReadonlyArray<readonly [string, Value]> = [
  ["", undefined],
  [" \n\t ", undefined],
  ['"', ""],
  ['"hel', "hel"],
  ['{"a": "hel', { a: "hel" }],
  ['"a\\', "a"],
  ['"a\\n', "a\n"],
  ['"a\\u00', "a"],
  ['"a\\u00e9', "aé"],
  ['"\\"\\\\\\/\\b\\f\\n\\r\\t', '"\\/\b\f\n\r\t'],
  ['"x\\ud83d', "x"],
  ['"x\\ud83d\\', "x"],
  ['"x\\ud83d\\u', "x"],
  ['"x\\ud83d\\ude0', "x"],
  ['"x\\ud83d\\ude00', "x\u{1f600}"],
  ['"x\\ud83d\\u0041', "x\ud83dA"],
  ['"x\\ud83d\\n', "x\ud83d\n"],
  ['"x\\ud83d!', "x\ud83d!"],
  ['"x\\ud83d\\ud83d', "x\ud83d"],
  ['"x\\ud83d\\ud83d\\ude00', "x\ud83d\u{1f600}"],
  ['"\\ude00', "\ude00"],
  ['"\u{1f600}', "\u{1f600}"],
  ["1", 1],
  ["12", 12],
  ["-", undefined],
  ["-1", -1],
  ["-0", -0],
  ["0", 0],
  ["1.", 1],
  ["1.5", 1.5],
  ["1.50", 1.5],
  ["1e", 1],
  ["1E+", 1],
  ["1.5e", 1.5],
  ["1.5e-", 1.5],
  ["1.5e-2", 0.015],
  ["1e2", 100],
  ["-0.0", -0],
  ["[-", []],
  ["[1, -", [1]],
  ['{"n": -', {}],
  ['{"n": 12', { n: 12 }],
  ['{"n": 1.', { n: 1 }],
  ["[1, 2", [1, 2]],
  ["[1, 2,", [1, 2]],
  ["123456789012345678901234567890", 123456789012345678901234567890],
  ["t", undefined],
  ["tru", undefined],
  ["true", true],
  ["fals", undefined],
  ["false", false],
  ["nul", undefined],
  ["null", null],
  ["[tr", []],
  ["[true", [true]],
  ['{"a": nul', {}],
  ['{"a": null', { a: null }],
  ['{"a": fa', {}],
  ["{", {}],
  ['{"', {}],
  ['{"ke', {}],
  ['{"key"', {}],
  ['{"key" :', {}],
  ['{"key": ', {}],
  ['{"key": "', { key: "" }],
  ['{"key": {', { key: {} }],
  ['{"key": [', { key: [] }],
  ['{"a": 1, "b', { a: 1 }],
  ['{"a": 1, "b": [', { a: 1, b: [] }],
  ["[", []],
  ["[[[", [[[]]]],
  ["[[], {}, [", [[], {}, []]],
  ['{"a": [1, {"b": [true, "x', { a: [1, { b: [true, "x"] }] }],
  ['[{"a": {"b": {"c": "d"}}}, ', [{ a: { b: { c: "d" } } }]],
  ['{"a": {}, "b": [[]]}', { a: {}, b: [[]] }],
  ['{"a": 1, "b": 2, "a": "x', { a: "x", b: 2 }],
  ['{"__proto__": {"x": 1', JSON.parse('{"__proto__": {"x": 1}}') as JsonValue],
];

test("provisional values of prefixes", () => {
  for (const [prefix, expected] of PROVISIONAL) {
    assert.ok(same(parsePartial(prefix), expected), `${JSON.stringify(prefix)} -> ${JSON.stringify(parsePartial(prefix))}`);
    assert.ok(same(feedByChar(prefix).value, expected), JSON.stringify(prefix));
  }
});

test("finish() matches JSON.parse", () => {
  const texts = ["0", "-0", "12", "1.5", "1e5", "-1.25E-3", "true", "false", "null", '""', "[]", "{}",
    ' \t\n\r[ 1 , { "a" : [ ] } ] \n', '"\\ud83d"', '"\\ud83d\\n"', '"\\ud83d\\ude00"',
    '"\\udc00\\ud83d"', '{"a": 1, "a": 2}', "1e400", "-1e-400", "[1E400]", '"\x7f\u2028"'];
  for (const text of texts) {
    const parser = feedByChar(text);
    assert.ok(parser.complete, text);
    assert.ok(same(parser.finish(), JSON.parse(text) as JsonValue), text);
    assert.ok(same(parser.finish(), parser.value), text); // finish() does not change the parser
  }
});

test("a top-level number is complete yet can grow", () => {
  const parser = new PartialJson();
  parser.feed("12");
  assert.ok(parser.complete);
  assert.equal(parser.finish(), 12);
  parser.feed("3.5");
  assert.equal(parser.finish(), 123.5);
  parser.feed(" ");
  assert.throws(() => parser.feed("4"), /offset 6/);
});

test("value is a fresh copy", () => {
  const parser = new PartialJson();
  parser.feed('{"a": [1, {"b": "c');
  const first = parser.value as { a: [number, { b: string }, ...JsonValue[]] };
  first.a.push("mutated");
  first.a[1].b = "mutated";
  parser.feed('d"}]}');
  assert.deepEqual(parser.finish(), { a: [1, { b: "cd" }] });
});

// -- rejection ----------------------------------------------------------------------------

const REFUSED: ReadonlyArray<readonly [string, number]> = [
  ['{"a" 1', 5], ["[1,]", 3], ["[1,,2]", 3], ["{,", 1], ['{"a":1,}', 7], ['{"a"::1}', 5],
  ['{"a":1 "b":2}', 7], ['{"a":]', 5], ["{1:2}", 1], ["[}", 1], ["[1 2]", 3], ['{"a":1}}', 7],
  ['{"a":1} x', 8], ['"" ""', 3], ["truefalse", 4], ["01", 1], ["00", 1], ["-01", 2], ["1.e5", 2],
  ["1.5.", 3], ["1ex", 2], ["1e+-1", 3], ["[-]", 2], [".5", 0], ["+1", 0], ["'a'", 0],
  ["{'a': 1}", 1], ["NaN", 0], ["Infinity", 0], ["-Infinity", 1], ["[1, nan]", 5], ["tru e", 3],
  ["nulx", 3], ["True", 0], ['"a\nb"', 2], ['"\x00"', 1], ['"\x1f"', 1], ['["\t"]', 2],
  ['"\\x41"', 2], ['"\\U0041"', 2], ['"\\u12G4"', 5], ['"\\u 123"', 3], ['"\\ud83d\\uZZZZ"', 9],
  ['"\\ud83d\\x"', 8], ["\u00a01", 0], ["\ufeff1", 0], ["[1]\x00", 3], ["}", 0], [":", 0],
];

test("invalid text is refused at the first impossible character", () => {
  for (const [text, offset] of REFUSED) {
    assert.throws(() => JSON.parse(text), SyntaxError, text);
    const parser = new PartialJson();
    let caught: PartialJsonError | undefined;
    for (let i = 0; i < text.length; i++) {
      if (i < offset) {
        parser.feed(text[i] as string);
        continue;
      }
      try {
        parser.feed(text[i] as string);
      } catch (err) {
        caught = err as PartialJsonError;
      }
      break;
    }
    assert.ok(caught instanceof PartialJsonError, text);
    assert.equal(caught.offset, offset, text);
    assert.match(caught.message, new RegExp(`offset ${offset}$`));
    assert.throws(() => parsePartial(text), (err: unknown) => err instanceof PartialJsonError && err.offset === offset);
    // The parser is spent: it keeps refusing, with the same error.
    assert.throws(() => parser.feed("1"), (err: unknown) => err === caught);
    assert.throws(() => parser.finish(), PartialJsonError);
    assert.ok(!parser.complete);
  }
});

test("the error message names the character and what was expected", () => {
  assert.throws(() => parsePartial("[1,]"), { message: "unexpected \"]\": expected a value at offset 3" });
});

test("finish() refuses an incomplete document without spending the parser", () => {
  const texts = ["", "  ", "{", '{"a"', '{"a":', '{"a":1', '{"a":1,', "[1,", "[", '"abc', '"\\',
    '"\\u12', '"\\ud83d', "tru", "nul", "-", "1.", "1e", "1e+", "[1.5e"];
  for (const text of texts) {
    const parser = feedByChar(text);
    assert.ok(!parser.complete, text);
    assert.throws(() => parser.finish(), { message: `unexpected end of document at offset ${text.length}` });
  }
  const parser = new PartialJson();
  parser.feed('{"a"');
  assert.throws(() => parser.finish(), PartialJsonError);
  parser.feed(": 1}");
  assert.deepEqual(parser.finish(), { a: 1 });
});

// -- cost -----------------------------------------------------------------------------------

test("feeding 200 KB one character at a time is linear", () => {
  const items = Array.from({ length: 3000 }, (_, i) => ({ id: i, name: `item é\\"${i}"`, tags: ["a"], x: i / 7 }));
  const doc = JSON.stringify({ items, ok: true, none: null });
  assert.ok(doc.length >= 200_000);
  const parser = new PartialJson();
  for (let i = 0; i < doc.length; i++) parser.feed(doc[i] as string);
  assert.ok(same(parser.finish(), JSON.parse(doc) as JsonValue));
});

test("deep nesting needs no recursion", () => {
  const depth = 200_000;
  const parser = new PartialJson();
  parser.feed("[".repeat(depth) + '"x');
  let value = parser.value;
  for (let n = 0; n < depth - 1; n++) value = (value as JsonValue[])[0];
  assert.deepEqual(value, ["x"]);
  parser.feed('"' + "]".repeat(depth));
  assert.ok(parser.complete);
});

// -- unicode only ---------------------------------------------------------------------------

test("unicodeOnly refuses lone surrogates", () => {
  const cases: ReadonlyArray<readonly [string, number]> = [
    ['"\\ud800"', 7], ['"\\ud800x"', 7], ['"\\ud800\\n"', 8], ['"\\ud800\\u0041"', 12],
    ['"\\udc00"', 6], ['{"\\udfff": 1}', 7], ['"a\ud800"', 2], ['"a\udc00b"', 2],
  ];
  for (const [text, offset] of cases) {
    assert.notEqual(JSON.parse(text), undefined); // what a plain parser accepts
    const parser = new PartialJson({ unicodeOnly: true });
    assert.throws(() => parser.feed(text), (err: unknown) => err instanceof PartialJsonError && err.offset === offset && /surrogate/.test(err.message), text);
  }
  // A lone high surrogate cut at the end of a fragment: refused where it stands.
  const split = new PartialJson({ unicodeOnly: true });
  split.feed('"a\ud800');
  assert.throws(() => split.feed("b"), (err: unknown) => err instanceof PartialJsonError && err.offset === 2);
});

test("unicodeOnly keeps pairs, also split between fragments", () => {
  const parser = new PartialJson({ unicodeOnly: true });
  for (const piece of ['"\\ud8', "3d\\", "ude00 \u{1f600}", '\ud83d', "\ude00", '"']) parser.feed(piece);
  assert.equal(parser.finish(), "\u{1f600} \u{1f600}\u{1f600}");
});
