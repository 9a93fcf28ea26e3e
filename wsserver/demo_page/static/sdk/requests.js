/**
 * Requests that start a response, sent again after a resume until the server answers.
 *
 * A connection can drop between the send and the server reading it. Each request
 * carries an id; after a resume the one not yet answered is sent again, and the server
 * answers a copy it already had with `duplicate_request` (nothing new starts).
 * @packageDocumentation
 */
/** Numbers the requests that start a response and keeps the one not yet answered. */
export class ResponseRequests {
    /** The last request sent, until its `response.created` or `error` came. */
    pending;
    count = 0;
    // Unique per client object: a page that reloads must not reuse the old page's ids,
    // which the server remembers (its last 16) and would answer duplicate_request.
    prefix = `req_${Math.random().toString(36).slice(2, 10)}_`;
    /** The request with its id, kept until answered. */
    track(message) {
        this.count += 1;
        const tracked = { ...message, id: message.id ?? `${this.prefix}${this.count}` };
        this.pending = tracked;
        return tracked;
    }
    /** The pending request got its answer (started, or refused). */
    observe(event) {
        if (event.type !== "response.created" && event.type !== "error")
            return;
        if (this.pending !== undefined && event["request_id"] === this.pending.id)
            this.pending = undefined;
    }
    /** After a resume, send the request the server may never have read. */
    afterReady(ready, send) {
        if (this.pending !== undefined && ready.resumed)
            send(this.pending);
    }
}
