/**
 * The grammar tables of the incremental JSON parser: modes, punctuation, numbers.
 * @packageDocumentation
 */

/** Where the parser is between tokens, or which token it is inside. */
export const enum Mode {
  /** A value must come next. */
  Value,
  /** Just after `[`: a value or `]`. */
  ArrayFirst,
  /** After an array element: `,` or `]`. */
  ArrayNext,
  /** Just after `{`: a key or `}`. */
  ObjectFirst,
  /** After `,` in an object: a key. */
  Key,
  /** After a key. */
  Colon,
  /** After a member's value: `,` or `}`. */
  ObjectNext,
  String,
  Number,
  Literal,
  /** The top-level value is complete; only whitespace may follow. */
  Done,
}

/** Not a mode: the innermost container ends. */
export const CLOSE = -1;

type Next = Mode | typeof CLOSE;

function edges(...pairs: Array<readonly [string, Next]>): ReadonlyMap<string, Next> {
  return new Map(pairs);
}

/** For each mode between tokens: the punctuation it accepts, where each leads, what it wanted. */
export const PUNCTUATION: ReadonlyMap<Mode, readonly [ReadonlyMap<string, Next>, string]> = new Map<
  Mode,
  readonly [ReadonlyMap<string, Next>, string]
>([
  [Mode.ArrayFirst, [edges(["]", CLOSE]), "a value or ']'"]],
  [Mode.ArrayNext, [edges([",", Mode.Value], ["]", CLOSE]), "',' or ']' in an array"]],
  [Mode.ObjectFirst, [edges(['"', Mode.String], ["}", CLOSE]), "an object key or '}'"]],
  [Mode.Key, [edges(['"', Mode.String]), "an object key"]],
  [Mode.Colon, [edges([":", Mode.Value]), "':' after an object key"]],
  [Mode.ObjectNext, [edges([",", Mode.Key], ["}", CLOSE]), "',' or '}' in an object"]],
  [Mode.Done, [edges(), "nothing after the document"]],
]);

/** Number grammar states, named after the last part read. */
export const enum Num {
  Sign,
  Zero,
  Int,
  Dot,
  Frac,
  Exp,
  ExpSign,
  ExpDigits,
}

/** States in which the number text so far is a whole number. */
export const NUMBER_TERMINAL: ReadonlySet<Num> = new Set([Num.Zero, Num.Int, Num.Frac, Num.ExpDigits]);

function isDigit(c: string): boolean {
  return c >= "0" && c <= "9";
}

/** The next number state after `c`, or `undefined` when `c` cannot extend the number. */
export function numberEdge(state: Num, c: string): Num | undefined {
  switch (state) {
    case Num.Sign:
      return c === "0" ? Num.Zero : c >= "1" && c <= "9" ? Num.Int : undefined;
    case Num.Zero:
      return c === "." ? Num.Dot : c === "e" || c === "E" ? Num.Exp : undefined;
    case Num.Int:
      return isDigit(c) ? Num.Int : c === "." ? Num.Dot : c === "e" || c === "E" ? Num.Exp : undefined;
    case Num.Dot:
      return isDigit(c) ? Num.Frac : undefined;
    case Num.Frac:
      return isDigit(c) ? Num.Frac : c === "e" || c === "E" ? Num.Exp : undefined;
    case Num.Exp:
      return c === "+" || c === "-" ? Num.ExpSign : isDigit(c) ? Num.ExpDigits : undefined;
    case Num.ExpSign:
    case Num.ExpDigits:
      return isDigit(c) ? Num.ExpDigits : undefined;
  }
}

/** The state a number starts in with `c`, or `undefined` when `c` starts no number. */
export function numberStart(c: string): Num | undefined {
  return c === "-" ? Num.Sign : c === "0" ? Num.Zero : c >= "1" && c <= "9" ? Num.Int : undefined;
}

/** Characters to drop from the end of a cut number to reach its last valid prefix. */
export function numberTrim(state: Num): number {
  return state === Num.Dot || state === Num.Exp ? 1 : state === Num.ExpSign ? 2 : 0;
}

/** The literals, by first character. */
export const LITERALS: ReadonlyMap<string, readonly [string, boolean | null]> = new Map<
  string,
  readonly [string, boolean | null]
>([
  ["t", ["true", true]],
  ["f", ["false", false]],
  ["n", ["null", null]],
]);

/** The one-character escapes and what they stand for. */
export const SIMPLE_ESCAPES: ReadonlyMap<string, string> = new Map([
  ['"', '"'],
  ["\\", "\\"],
  ["/", "/"],
  ["b", "\b"],
  ["f", "\f"],
  ["n", "\n"],
  ["r", "\r"],
  ["t", "\t"],
]);

/** Whether `c` is a hex digit. */
export function isHex(c: string): boolean {
  return /^[0-9a-fA-F]$/.test(c);
}

/** Whitespace between JSON tokens. */
export function isWhitespace(c: string): boolean {
  return c === " " || c === "\t" || c === "\n" || c === "\r";
}

/**
 * Runs of string characters that need no decoding, taken in one step. The second one
 * (the `u` flag: a lone surrogate is a code point of its own) leaves lone surrogates out.
 */
export const PLAIN_RUN = /[^"\\\x00-\x1f]+/y;
export const PLAIN_UNICODE_RUN = /[^"\\\x00-\x1f\ud800-\udfff]+/uy;
