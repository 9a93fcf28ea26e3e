"""Opening, resuming and taking over sessions on this worker."""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from protocol.codes import ErrorCode
from protocol.errors import ProtocolViolation, ResumeRefused
from protocol.messages import SessionResume, SessionStart
from protocol.session import ResponseState, ServerSession, SessionLimits
from protocol.snapshot import (
    ConversationSnapshot,
    StreamSnapshot,
    conversation_snapshot,
    restore_session,
    stream_snapshot,
)
from protocol.tool_loop import CallState, ToolCallState
from wsserver.frontdoor.principal import ANONYMOUS_ID
from wsserver.session.context import EndedRuntime
from wsserver.session.runtime import RuntimeContext, SessionRuntime
from wsserver.store.base import (
    SessionRecord,
    SessionStore,
    SessionStoreUnavailable,
    StoredDataUnreadable,
    ToolCallStatus,
    hash_token,
    new_resume_token,
    token_matches,
)
from wsserver.worker.stored_log import StoredLog, contiguous_tail, decode_log, first_hole, tail_for

log = logging.getLogger(__name__)

_ENDED_MEMORY = 10_000


StoredResumeCheck = Callable[[ServerSession, int], bool]
"""A dialect's check of a resume against a stored session (its state and acked seq)."""


class ResumeVetoed(Exception):
    """A dialect refused the resume before the takeover (it has answered the client)."""


def _unavailable(what: str) -> ProtocolViolation:
    return ProtocolViolation(
        ErrorCode.STORE_UNAVAILABLE, f"session store unavailable: cannot {what} now; retry"
    )


class SessionManager:
    """The sessions this worker runs, and how they come and go."""

    def __init__(self, store: SessionStore, context_factory: Any, limits: SessionLimits) -> None:
        self.store = store
        self._context: RuntimeContext = context_factory(self)
        self.limits = limits
        self.sessions: dict[str, SessionRuntime] = {}
        self.takeovers = 0
        self._ended: OrderedDict[str, None] = OrderedDict()
        """Recently ended sessions: refused at once, before the store has deleted them."""

    @property
    def worker_id(self) -> str:
        """This worker's name in the store."""
        return self._context.worker_id

    # -- new sessions ------------------------------------------------------

    async def open(
        self, message: SessionStart, principal: str = ANONYMOUS_ID
    ) -> tuple[SessionRuntime, str]:
        """Create a session owned by ``principal``; its runtime and resume token (shown once)."""
        limits = self.limits
        settings = message.settings
        if settings is not None and settings.max_output_tokens is not None:
            wanted = min(settings.max_output_tokens, limits.max_output_tokens)
            limits = SessionLimits(**{**limits.to_dict(), "max_output_tokens": wanted})
        if settings is not None and settings.tool_timeout_ms is not None:
            limits = SessionLimits(
                **{**limits.to_dict(), "tool_timeout_ms": settings.tool_timeout_ms}
            )
        session_id = "sess_" + secrets.token_urlsafe(16)
        token = new_resume_token()
        session = ServerSession(session_id, limits, message.instructions)
        if message.audio is not None:
            session.audio = message.audio.model_dump()
        if message.tools:
            session.tools.set_tools([t.model_dump() for t in message.tools])
        if settings is not None and settings.tool_rounds is not None:
            session.tool_rounds = settings.tool_rounds
        record = SessionRecord(
            session_id,
            hash_token(token),
            time.time(),
            owner=self.worker_id,
            conversation=conversation_snapshot(session).to_dict(),
            stream=stream_snapshot(session).to_dict(),
            principal=principal,
        )
        try:
            await self.store.create(record)
        except SessionStoreUnavailable:
            raise _unavailable("open a session") from None
        runtime = SessionRuntime(
            session, self._context, token_hash=record.token_hash, epoch=1, principal=principal
        )
        runtime.journal.conversation_version = session.conversation.version
        self.sessions[session_id] = runtime
        return runtime, token

    # -- resume ------------------------------------------------------------

    async def resume(
        self,
        message: SessionResume,
        principal: str = ANONYMOUS_ID,
        check: StoredResumeCheck | None = None,
    ) -> SessionRuntime:
        """The runtime to re-attach: local, or taken over from the store.

        ``check`` (a dialect's) sees a session another worker owned as the takeover
        would restore it, before the claim; if it refuses, :class:`ResumeVetoed` is
        raised and the session stays with its owner.

        A session another principal opened is answered exactly like one that does
        not exist (``unknown_session``), checked before the resume token: nobody
        learns whether a session id exists, or whether they guessed its token.
        """
        if message.session_id in self._ended:
            raise ResumeRefused(ErrorCode.UNKNOWN_SESSION, "no such session")
        local = self.sessions.get(message.session_id)
        try:
            record = await self.store.get(message.session_id)
        except StoredDataUnreadable as exc:
            # Nothing in it can be trusted, not even whose it is: a session of its own
            # resumes from this worker's copy, any other is answered as unknown.
            log.error("stored record of %s is unreadable: %s", message.session_id, exc)
            if local is not None and self._holds(local, message, principal):
                self._check_replay(local.session, message.last_seq)
                return local
            raise ResumeRefused(ErrorCode.UNKNOWN_SESSION, "no such session") from None
        except SessionStoreUnavailable:
            # Live sessions keep working without the store: check the token locally.
            if local is not None and self._holds(local, message, principal):
                return local
            raise _unavailable("resume a session held by another worker") from None
        if record is None:
            if local is not None:
                local.moved()
            raise ResumeRefused(ErrorCode.UNKNOWN_SESSION, "no such session")
        if record.principal != principal:
            raise ResumeRefused(ErrorCode.UNKNOWN_SESSION, "no such session")
        if not token_matches(message.resume_token, record.token_hash):
            raise ResumeRefused(ErrorCode.INVALID_RESUME_TOKEN, "resume token does not match")
        if local is not None and not local.closed and local.epoch == record.epoch:
            self._check_replay(local.session, message.last_seq)
            return local
        # Refuse before claiming: a resume that cannot succeed must not take the
        # session away from a live owner.
        _restorable(record, message.last_seq)
        try:
            missed = await self.store.read_log(message.session_id, message.last_seq)
            self._check_stored_replay(
                record, decode_log(message.session_id, missed), message.last_seq
            )
            if check is not None:
                whole = await self.store.read_log(message.session_id, 0)
                stored = contiguous_tail(decode_log(message.session_id, whole))
                session, _lost = _restored(record, stored, message.last_seq)
                if not check(session, session.replay.acked_seq):
                    raise ResumeVetoed
        except StoredDataUnreadable as exc:
            raise _log_unreadable(record, exc) from None
        except SessionStoreUnavailable:
            raise _unavailable("resume a session held by another worker") from None
        if local is not None:
            # Our copy is stale: another worker owned it since.
            local.moved()
        return await self._take_over(message)

    @staticmethod
    def _holds(local: SessionRuntime, message: SessionResume, principal: str) -> bool:
        """Whether this worker's own copy of a session answers ``message``'s resume."""
        return local.principal == principal and token_matches(
            message.resume_token, local.token_hash
        )

    def _check_stored_replay(self, record: SessionRecord, stored: StoredLog, last_seq: int) -> None:
        stream = StreamSnapshot.from_dict(record.stream)
        missing_from = last_seq + 1
        # A hole inside the log counts too: a Redis primary that failed over to a
        # lagging replica lost writes it had acknowledged, and later ones went on.
        # So does an entry that does not read back (stored_log.py).
        hole = first_hole(stored, missing_from)
        if missing_from <= stream.last_seq and hole is not None:
            conversation = ConversationSnapshot.from_dict(record.conversation)
            raise ResumeRefused(
                ErrorCode.REPLAY_UNAVAILABLE,
                f"events {hole[0]}..{hole[1]} are no longer stored",
                details={"snapshot": conversation.public()},
            )
        # A client may hold events its dead worker never persisted, but never more
        # than a worker keeps unpersisted.
        if last_seq > stream.last_seq + self.limits.replay_max_events:
            raise ResumeRefused(
                ErrorCode.INVALID_SEQ,
                f"last_seq {last_seq} is ahead of the session (last stored {stream.last_seq})",
            )

    def _check_replay(self, session: ServerSession, last_seq: int) -> None:
        try:
            session.replay_after(last_seq)
        except ResumeRefused as refusal:
            refusal.details = {"snapshot": conversation_snapshot(session).public()}
            raise

    async def _take_over(self, message: SessionResume) -> SessionRuntime:
        session_id = message.session_id
        try:
            try:
                claimed = await self.store.claim(session_id, self.worker_id)
            except StoredDataUnreadable as exc:
                # Damaged between the check and the claim.
                log.error("stored record of %s is unreadable: %s", session_id, exc)
                claimed = None
            if claimed is None:
                raise ResumeRefused(ErrorCode.UNKNOWN_SESSION, "no such session")
            # The whole stored log, not only what the client missed: the replay buffer
            # is then as the old owner's was (a dialect rebuilds its translation from
            # an earlier point, docs/REALTIME.md); the resume still sends after last_seq.
            whole = await self.store.read_log(session_id, 0)
        except StoredDataUnreadable as exc:
            raise _log_unreadable(claimed, exc) from None
        except SessionStoreUnavailable:
            raise _unavailable("resume a session held by another worker") from None
        stored = contiguous_tail(decode_log(session_id, whole))
        # Both checked again after the claim: the old owner may have written or trimmed
        # in between (and a snapshot is read by the replay check).
        _restorable(claimed, message.last_seq)
        self._check_stored_replay(claimed, tail_for(stored, message.last_seq), message.last_seq)
        conversation = ConversationSnapshot.from_dict(claimed.conversation)
        stream = StreamSnapshot.from_dict(claimed.stream)
        session, lost = _restored(claimed, stored, message.last_seq)
        runtime = SessionRuntime(
            session,
            self._context,
            token_hash=claimed.token_hash,
            epoch=claimed.epoch,
            principal=claimed.principal,
        )
        runtime.journal.conversation_version = conversation.version
        if message.last_seq > stream.last_seq:
            # The client saw events its old worker never stored: they are lost.
            runtime.lost_after_seq = stream.last_seq
        self.sessions[session_id] = runtime
        self.takeovers += 1
        try:
            await self._adopt_tool_calls(runtime, lost)
        except Exception as exc:
            # Whatever a damaged ledger does to the adoption, the lost response still
            # ends below (invariant 2); results for calls not adopted get an answer.
            log.error("tool calls of %s not adopted at takeover: %r", session_id, exc)
        if lost is not None:
            # The old owner is dead (no lease) or was overtaken; either way it is done.
            reason = "session_moved" if claimed.owner_live else "worker_lost"
            runtime.end_lost_response(lost, reason)
        log.info(
            "took over %s at epoch %d from %s (%s)",
            session_id,
            claimed.epoch,
            claimed.owner,
            "live" if claimed.owner_live else "lease expired",
        )
        return runtime

    async def _adopt_tool_calls(self, runtime: SessionRuntime, lost: ResponseState | None) -> None:
        """Know the calls the old owner emitted, so results and resumes find them.

        The client may have the lost response's calls before the old owner's batch
        with their round reached the store: the ledger has them (written first), the
        stored history does not. Those join the history when the lost response ends.
        """
        try:
            records = await self.store.tool_calls(runtime.session_id)
        except StoredDataUnreadable as exc:
            # Like each damaged entry: none adopted; results for them get an answer.
            log.error("tool calls of %s unreadable at takeover: %s", runtime.session_id, exc)
            return
        except SessionStoreUnavailable:
            log.warning("tool calls of %s unavailable at takeover", runtime.session_id)
            return
        session = runtime.session
        session_id = runtime.session_id
        in_history = {c.call_id for t in session.conversation.turns for c in t.tool_calls}
        for record in records:
            # Round -1: the old owner's rounds are over; a call in the history (or
            # trimmed from it) is never recorded again. A call of the lost response
            # the history lacks takes that response's round, so its end records it.
            unrecorded = (
                lost is not None
                and record.response_id == lost.id
                and record.call_id not in in_history
            )
            round = lost.generations if unrecorded and lost is not None else -1
            call = ToolCallState(record.call_id, record.name, record.response_id, round=round)
            call.text = [record.arguments]
            try:
                call.arguments = json.loads(record.arguments)
                if record.status is ToolCallStatus.COMPLETED and record.output is not None:
                    call.output = json.loads(record.output)
            except (TypeError, ValueError, RecursionError) as exc:
                # A damaged call (or one nested deeper than the parser recurses) is
                # left out (its result is then an unknown call's); the takeover and
                # the session's other calls go on.
                log.error("tool call %s of %s left out: %r", record.call_id, session_id, exc)
                continue
            if record.status is ToolCallStatus.PENDING:
                call.state = CallState.EMITTED
            elif record.status is ToolCallStatus.COMPLETED:
                call.state = CallState.ANSWERED
                call.error = record.error
            else:
                call.state = CallState.TIMED_OUT
            session.tools.adopt(call)

    # -- endings -------------------------------------------------------------

    def session_ended(self, runtime: EndedRuntime, *, remove_from_store: bool) -> None:
        """Forget a runtime; an ended session leaves the store too (its ledger stays)."""
        if self.sessions.get(runtime.session_id) is runtime:
            del self.sessions[runtime.session_id]
        if remove_from_store:
            self._ended[runtime.session_id] = None
            while len(self._ended) > _ENDED_MEMORY:
                self._ended.popitem(last=False)
            # Deleted by the writer with the session's last events and usage, and
            # retried like any write while the store is unreachable.
            runtime.journal.remove = True
            runtime.persist()

    async def renew_leases(self) -> None:
        """Keep ownership of every local session; give up the ones taken over."""
        runtimes = list(self.sessions.values())
        leases = [(r.session_id, r.epoch, self.worker_id) for r in runtimes]
        try:
            result = await self.store.renew(leases)
        except SessionStoreUnavailable:
            return
        for runtime in runtimes:
            if runtime.session_id in result.stale:
                runtime.moved()
            elif runtime.session_id in result.gone:
                runtime.record_lost()


_DAMAGED_SNAPSHOT = (KeyError, IndexError, TypeError, ValueError, AttributeError)
"""What restoring a snapshot of the wrong shape raises (another version's, or damaged)."""


def _restorable(record: SessionRecord, last_seq: int) -> None:
    """Refuse a resume whose stored snapshots do not restore, before anything is done
    with them (a claim, a replay check, a snapshot for the client)."""
    try:
        _restored(record, StoredLog(last_seq + 1, []), last_seq)
        ConversationSnapshot.from_dict(record.conversation).public()
    except _DAMAGED_SNAPSHOT as exc:
        log.error("stored snapshot of %s does not restore: %r", record.session_id, exc)
        raise ResumeRefused(
            ErrorCode.REPLAY_UNAVAILABLE, "the stored session is unreadable"
        ) from None


def _log_unreadable(record: SessionRecord | None, exc: StoredDataUnreadable) -> ResumeRefused:
    """The refusal of a resume whose stored replay log does not read back at all (its
    key holds another type): nothing in it can be replayed; the snapshot still can."""
    session_id = record.session_id if record is not None else "?"
    log.error("stored replay log of %s is unreadable: %s", session_id, exc)
    details = None
    try:
        if record is not None:
            details = {"snapshot": ConversationSnapshot.from_dict(record.conversation).public()}
    except _DAMAGED_SNAPSHOT:
        pass  # damaged as well: refused without a snapshot
    return ResumeRefused(
        ErrorCode.REPLAY_UNAVAILABLE, "the stored replay log is unreadable", details=details
    )


def _restored(
    record: SessionRecord, stored: StoredLog, last_seq: int
) -> tuple[ServerSession, ResponseState | None]:
    """The session as a takeover restores it from the store (from ``stored``, a
    contiguous tail), and the response its dead owner left running (if any)."""
    return restore_session(
        record.session_id,
        ConversationSnapshot.from_dict(record.conversation),
        StreamSnapshot.from_dict(record.stream),
        tail_for(stored, last_seq).events,
        client_last_seq=last_seq,
        partial_text=record.partial_text,
    )
