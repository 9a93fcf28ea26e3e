/**
 * The grammar tables of the incremental JSON parser: modes, punctuation, numbers.
 * @packageDocumentation
 */
/** Not a mode: the innermost container ends. */
export const CLOSE = -1;
function edges(...pairs) {
    return new Map(pairs);
}
/** For each mode between tokens: the punctuation it accepts, where each leads, what it wanted. */
export const PUNCTUATION = new Map([
    [1 /* Mode.ArrayFirst */, [edges(["]", CLOSE]), "a value or ']'"]],
    [2 /* Mode.ArrayNext */, [edges([",", 0 /* Mode.Value */], ["]", CLOSE]), "',' or ']' in an array"]],
    [3 /* Mode.ObjectFirst */, [edges(['"', 7 /* Mode.String */], ["}", CLOSE]), "an object key or '}'"]],
    [4 /* Mode.Key */, [edges(['"', 7 /* Mode.String */]), "an object key"]],
    [5 /* Mode.Colon */, [edges([":", 0 /* Mode.Value */]), "':' after an object key"]],
    [6 /* Mode.ObjectNext */, [edges([",", 4 /* Mode.Key */], ["}", CLOSE]), "',' or '}' in an object"]],
    [10 /* Mode.Done */, [edges(), "nothing after the document"]],
]);
/** States in which the number text so far is a whole number. */
export const NUMBER_TERMINAL = new Set([1 /* Num.Zero */, 2 /* Num.Int */, 4 /* Num.Frac */, 7 /* Num.ExpDigits */]);
function isDigit(c) {
    return c >= "0" && c <= "9";
}
/** The next number state after `c`, or `undefined` when `c` cannot extend the number. */
export function numberEdge(state, c) {
    switch (state) {
        case 0 /* Num.Sign */:
            return c === "0" ? 1 /* Num.Zero */ : c >= "1" && c <= "9" ? 2 /* Num.Int */ : undefined;
        case 1 /* Num.Zero */:
            return c === "." ? 3 /* Num.Dot */ : c === "e" || c === "E" ? 5 /* Num.Exp */ : undefined;
        case 2 /* Num.Int */:
            return isDigit(c) ? 2 /* Num.Int */ : c === "." ? 3 /* Num.Dot */ : c === "e" || c === "E" ? 5 /* Num.Exp */ : undefined;
        case 3 /* Num.Dot */:
            return isDigit(c) ? 4 /* Num.Frac */ : undefined;
        case 4 /* Num.Frac */:
            return isDigit(c) ? 4 /* Num.Frac */ : c === "e" || c === "E" ? 5 /* Num.Exp */ : undefined;
        case 5 /* Num.Exp */:
            return c === "+" || c === "-" ? 6 /* Num.ExpSign */ : isDigit(c) ? 7 /* Num.ExpDigits */ : undefined;
        case 6 /* Num.ExpSign */:
        case 7 /* Num.ExpDigits */:
            return isDigit(c) ? 7 /* Num.ExpDigits */ : undefined;
    }
}
/** The state a number starts in with `c`, or `undefined` when `c` starts no number. */
export function numberStart(c) {
    return c === "-" ? 0 /* Num.Sign */ : c === "0" ? 1 /* Num.Zero */ : c >= "1" && c <= "9" ? 2 /* Num.Int */ : undefined;
}
/** Characters to drop from the end of a cut number to reach its last valid prefix. */
export function numberTrim(state) {
    return state === 3 /* Num.Dot */ || state === 5 /* Num.Exp */ ? 1 : state === 6 /* Num.ExpSign */ ? 2 : 0;
}
/** The literals, by first character. */
export const LITERALS = new Map([
    ["t", ["true", true]],
    ["f", ["false", false]],
    ["n", ["null", null]],
]);
/** The one-character escapes and what they stand for. */
export const SIMPLE_ESCAPES = new Map([
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
export function isHex(c) {
    return /^[0-9a-fA-F]$/.test(c);
}
/** Whitespace between JSON tokens. */
export function isWhitespace(c) {
    return c === " " || c === "\t" || c === "\n" || c === "\r";
}
/**
 * Runs of string characters that need no decoding, taken in one step. The second one
 * (the `u` flag: a lone surrogate is a code point of its own) leaves lone surrogates out.
 */
export const PLAIN_RUN = /[^"\\\x00-\x1f]+/y;
export const PLAIN_UNICODE_RUN = /[^"\\\x00-\x1f\ud800-\udfff]+/uy;
