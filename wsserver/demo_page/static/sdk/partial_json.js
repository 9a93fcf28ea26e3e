/**
 * Tolerant, incremental JSON parsing for streamed model output (a port of the server's
 * `protocol/partial_json.py`, with the same provisional-value rules).
 *
 * Tool-call arguments and structured output arrive as text fragments; a UI wants to show
 * the value while it grows. {@link PartialJson} is a stack machine over characters: each
 * fragment is consumed once, so a document fed in any number of pieces costs O(length),
 * and {@link PartialJson.value} is built from the parser's state without re-reading text.
 *
 * Provisional value of a prefix (docs/PROTOCOL.md, "Provisional values"):
 * - objects and arrays still open are closed;
 * - a string cut in the middle is what arrived, escapes decoded once complete (a high
 *   surrogate escape waits for its low half);
 * - an object key appears once its value has started;
 * - a number cut in the middle is its longest valid prefix (`1.` → 1, `1.5e-` → 1.5; a
 *   lone `-` is left out);
 * - `true`, `false` and `null` appear only when complete;
 * - nothing parsed yet reads as `undefined` (the server sends `null` there).
 *
 * {@link PartialJson.finish} returns exactly what `JSON.parse` makes of the whole text.
 * Text that can no longer begin a JSON document throws {@link PartialJsonError} at the
 * first impossible character, with its offset (in UTF-16 code units of the whole text).
 * @packageDocumentation
 */
import { CLOSE, isHex, isWhitespace, LITERALS, NUMBER_TERMINAL, numberEdge, numberStart, numberTrim, PLAIN_RUN, PLAIN_UNICODE_RUN, PUNCTUATION, SIMPLE_ESCAPES, } from "./partial_json_grammar.js";
import { MISSING, setMember, snapshot } from "./partial_json_snapshot.js";
/** The text so far cannot be the beginning of a JSON document, or is incomplete. */
export class PartialJsonError extends Error {
    offset;
    name = "PartialJsonError";
    /** @param offset - index, in UTF-16 code units of the whole text, of the refused character. */
    constructor(message, offset) {
        super(`${message} at offset ${offset}`);
        this.offset = offset;
    }
}
/** Feed text fragments; read the provisional value at any point. */
export class PartialJson {
    unicodeOnly;
    mode = 0 /* Mode.Value */;
    stack = [];
    root = MISSING;
    offset = 0;
    error;
    chunks = [];
    escape = "";
    isKey = false;
    /** unicodeOnly: a high surrogate that ended a fragment, waiting for its low half. */
    highSurrogate = "";
    number = "";
    numberState = 0 /* Num.Sign */;
    literal = "";
    literalValue = null;
    literalPos = 0;
    constructor(options = {}) {
        this.unicodeOnly = options.unicodeOnly ?? false;
    }
    /** Consume `fragment`; throws {@link PartialJsonError} at an impossible character. */
    feed(fragment) {
        if (this.error !== undefined)
            throw this.error;
        let i = 0;
        try {
            while (i < fragment.length)
                i = this.step(fragment, i);
        }
        catch (err) {
            if (err instanceof PartialJsonError)
                this.error = err;
            throw err;
        }
        this.offset += fragment.length;
    }
    /** The provisional value of the text so far; `undefined` before anything is parsed. */
    get value() {
        const leaf = this.leaf();
        const top = this.stack[this.stack.length - 1];
        if (top === undefined) {
            if (this.root !== MISSING)
                return snapshot(this.root, undefined, "", MISSING);
            return leaf === MISSING ? undefined : leaf;
        }
        return snapshot(this.root, top.container, top.key, leaf);
    }
    /**
     * Whether the text so far is a whole document, so that {@link finish} succeeds. A
     * top-level number counts as soon as it is valid, though more digits may extend it.
     */
    get complete() {
        if (this.error !== undefined)
            return false;
        if (this.mode === 10 /* Mode.Done */)
            return true;
        return this.mode === 8 /* Mode.Number */ && this.stack.length === 0 && NUMBER_TERMINAL.has(this.numberState);
    }
    /** The complete document's value; throws {@link PartialJsonError} if incomplete. */
    finish() {
        if (this.error !== undefined)
            throw this.error;
        if (!this.complete)
            throw new PartialJsonError("unexpected end of document", this.offset);
        if (this.mode === 8 /* Mode.Number */)
            return this.numberValue();
        return snapshot(this.root, undefined, "", MISSING);
    }
    // -- character dispatch -----------------------------------------------------------
    step(text, i) {
        const mode = this.mode;
        if (mode === 7 /* Mode.String */)
            return this.stringStep(text, i);
        if (mode === 8 /* Mode.Number */)
            return this.numberStep(text, i);
        const c = text[i];
        if (mode === 9 /* Mode.Literal */) {
            if (c !== this.literal[this.literalPos])
                this.fail(`expected '${this.literal}'`, text, i);
            this.literalPos += 1;
            if (this.literalPos === this.literal.length)
                this.addValue(this.literalValue);
            return i + 1;
        }
        if (isWhitespace(c))
            return i + 1;
        if (mode === 0 /* Mode.Value */ || (mode === 1 /* Mode.ArrayFirst */ && c !== "]")) {
            this.startValue(text, i);
            return i + 1;
        }
        const [accepted, wanted] = PUNCTUATION.get(mode);
        const next = accepted.get(c);
        if (next === undefined)
            this.fail(`expected ${wanted}`, text, i);
        if (next === CLOSE)
            this.close();
        else if (next === 7 /* Mode.String */)
            this.startString(true);
        else
            this.mode = next;
        return i + 1;
    }
    startValue(text, i) {
        const c = text[i];
        const literal = LITERALS.get(c);
        const numberState = numberStart(c);
        if (c === "{" || c === "[") {
            const container = c === "{" ? {} : [];
            this.attach(container);
            this.stack.push({ container, key: "" });
            this.mode = c === "{" ? 3 /* Mode.ObjectFirst */ : 1 /* Mode.ArrayFirst */;
        }
        else if (c === '"') {
            this.startString(false);
        }
        else if (numberState !== undefined) {
            this.number = c;
            this.numberState = numberState;
            this.mode = 8 /* Mode.Number */;
        }
        else if (literal !== undefined) {
            [this.literal, this.literalValue] = literal;
            this.literalPos = 1;
            this.mode = 9 /* Mode.Literal */;
        }
        else {
            this.fail("expected a value", text, i);
        }
    }
    stringStep(text, i) {
        if (this.escape !== "")
            return this.escapeStep(text, i);
        const c = text[i];
        if (this.highSurrogate !== "") {
            if (c >= "\udc00" && c <= "\udfff") {
                this.chunks.push(this.highSurrogate + c);
                this.highSurrogate = "";
                return i + 1;
            }
            this.fail("lone surrogate in a string", text, i, -1);
        }
        const run = this.unicodeOnly ? PLAIN_UNICODE_RUN : PLAIN_RUN;
        run.lastIndex = i;
        const match = run.exec(text);
        if (match !== null) {
            this.chunks.push(match[0]);
            return i + match[0].length;
        }
        if (c === '"')
            this.endString();
        else if (c === "\\")
            this.escape = "\\";
        else if (c >= "\ud800" && c <= "\udbff" && i + 1 === text.length) {
            // unicodeOnly: its low half may come with the next fragment.
            this.highSurrogate = c;
        }
        else if (c >= "\ud800" && c <= "\udfff")
            this.fail("lone surrogate in a string", text, i);
        else
            this.fail("control character in a string", text, i);
        return i + 1;
    }
    /**
     * Advance a pending escape by one character, or hand the character back. `escape`
     * holds the raw text so far; a complete high surrogate (`\uD83D`, 6 characters) stays
     * pending until the next characters show whether a low-surrogate escape pairs with it.
     */
    escapeStep(text, i) {
        const c = text[i];
        let esc = this.escape;
        if (esc.length === 1) {
            const simple = SIMPLE_ESCAPES.get(c);
            if (c === "u")
                this.escape = "\\u";
            else if (simple !== undefined) {
                this.chunks.push(simple);
                this.escape = "";
            }
            else
                this.fail("invalid escape in a string", text, i);
            return i + 1;
        }
        if (esc.length === 6) {
            if (c === "\\") {
                this.escape = esc + c;
                return i + 1;
            }
            this.codePoint(Number.parseInt(esc.slice(2), 16), text, i);
            this.escape = "";
            return i; // an ordinary character after a lone high surrogate
        }
        if (esc.length === 7) {
            if (c === "u") {
                this.escape = esc + c;
                return i + 1;
            }
            this.codePoint(Number.parseInt(esc.slice(2, 6), 16), text, i);
            this.escape = "\\";
            return i; // the backslash starts an ordinary escape
        }
        if (!isHex(c))
            this.fail("invalid \\u escape in a string", text, i);
        esc += c;
        if (esc.length === 12) {
            const high = Number.parseInt(esc.slice(2, 6), 16);
            const low = Number.parseInt(esc.slice(8), 16);
            if (low >= 0xdc00 && low <= 0xdfff) {
                this.chunks.push(String.fromCharCode(high, low));
                esc = "";
            }
            else {
                // Not a pair: the high half stands alone, the second escape starts over.
                this.codePoint(high, text, i);
                esc = esc.slice(6);
            }
        }
        if (esc.length === 6) {
            const code = Number.parseInt(esc.slice(2), 16);
            if (code < 0xd800 || code > 0xdbff) {
                this.codePoint(code, text, i);
                esc = "";
            }
        }
        this.escape = esc;
        return i + 1;
    }
    /** Add an escaped character that stands alone (not half of a surrogate pair). */
    codePoint(code, text, i) {
        if (this.unicodeOnly && code >= 0xd800 && code <= 0xdfff) {
            this.fail("lone surrogate escape in a string", text, i);
        }
        this.chunks.push(String.fromCharCode(code));
    }
    numberStep(text, i) {
        const c = text[i];
        const next = numberEdge(this.numberState, c);
        if (next !== undefined) {
            this.number += c;
            this.numberState = next;
            return i + 1;
        }
        if (!NUMBER_TERMINAL.has(this.numberState))
            this.fail("invalid number", text, i);
        // A number ends at the first character that cannot extend it; that character
        // belongs to what follows, so it is handed back undigested.
        this.addValue(this.numberValue());
        return i;
    }
    // -- state changes ----------------------------------------------------------------
    startString(isKey) {
        this.chunks = [];
        this.escape = "";
        this.isKey = isKey;
        this.mode = 7 /* Mode.String */;
    }
    endString() {
        const text = this.chunks.join("");
        this.chunks = [];
        const top = this.stack[this.stack.length - 1];
        if (this.isKey && top !== undefined) {
            top.key = text;
            this.mode = 5 /* Mode.Colon */;
        }
        else {
            this.addValue(text);
        }
    }
    /** Put a value that has started (container) or ended (scalar) into its parent. */
    attach(item) {
        const top = this.stack[this.stack.length - 1];
        if (top === undefined)
            this.root = item;
        else if (Array.isArray(top.container))
            top.container.push(item);
        else
            setMember(top.container, top.key, item);
    }
    addValue(item) {
        this.attach(item);
        this.afterValue();
    }
    close() {
        this.stack.pop();
        this.afterValue();
    }
    afterValue() {
        const top = this.stack[this.stack.length - 1];
        if (top === undefined)
            this.mode = 10 /* Mode.Done */;
        else
            this.mode = Array.isArray(top.container) ? 2 /* Mode.ArrayNext */ : 6 /* Mode.ObjectNext */;
    }
    fail(message, text, i, shift = 0) {
        throw new PartialJsonError(`unexpected ${JSON.stringify(text[i])}: ${message}`, this.offset + i + shift);
    }
    // -- reading the state ------------------------------------------------------------
    /** The provisional value of the scalar being read, or `MISSING`. */
    leaf() {
        if (this.mode === 7 /* Mode.String */ && !this.isKey)
            return this.chunks.join("");
        if (this.mode === 8 /* Mode.Number */ && this.numberState !== 0 /* Num.Sign */)
            return this.numberValue();
        return MISSING;
    }
    /** The value of the longest valid prefix of the number text (never just `-`). */
    numberValue() {
        const trim = numberTrim(this.numberState);
        return Number(trim ? this.number.slice(0, -trim) : this.number);
    }
}
/** The provisional value of `text`, a prefix of a JSON document. */
export function parsePartial(text) {
    const parser = new PartialJson();
    parser.feed(text);
    return parser.value;
}
