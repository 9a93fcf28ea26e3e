/**
 * The messages of the native protocol, v1 (docs/PROTOCOL.md), as TypeScript types.
 *
 * Server messages are typed by their `type`; fields the SDK does not know yet stay
 * readable through the index signature. `response.audio.delta` is a binary frame on the
 * wire; the SDK hands it over as an event whose `audio` holds the PCM16 bytes.
 * `response.truncated` is never on the wire: the SDK makes it for a response that can no
 * longer end with `response.done`.
 * @packageDocumentation
 */
/** Narrow an event to a known type: `if (isEvent(e, "response.done")) e.usage…`. */
export function isEvent(event, type) {
    return event.type === type;
}
