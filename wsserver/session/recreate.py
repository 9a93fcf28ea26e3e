"""Writing a session the store lost back into it (expired idle, or Redis restarted empty)."""

from __future__ import annotations

import logging
import time

from protocol.session import ServerSession
from protocol.snapshot import conversation_snapshot, stream_snapshot
from wsserver.session.persistence import SessionJournal
from wsserver.store.base import SessionRecord, SessionStore, SessionStoreUnavailable

log = logging.getLogger(__name__)


async def recreate_record(
    store: SessionStore,
    session: ServerSession,
    journal: SessionJournal,
    *,
    token_hash: str,
    owner: str,
    principal: str,
) -> None:
    """Create the session's record again; its buffered events go back into the journal."""
    record = SessionRecord(
        session.session_id,
        token_hash,
        time.time(),
        epoch=journal.epoch,
        owner=owner,
        conversation=conversation_snapshot(session).to_dict(),
        stream=stream_snapshot(session).to_dict(),
        principal=principal,
    )
    try:
        await store.create(record)
    except SessionStoreUnavailable:
        log.warning("could not re-create %s in the store", session.session_id)
    else:
        # Everything still buffered goes back in, so a resume elsewhere can use it.
        journal.pending = list(session.replay.after(session.replay.first_seq - 1))
        journal.conversation_version = session.conversation.version
