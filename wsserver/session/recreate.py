"""Writing a session the store lost back into it (expired idle, or Redis restarted empty)."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from protocol.snapshot import conversation_snapshot, stream_snapshot
from wsserver.store.base import SessionRecord, SessionStoreUnavailable

if TYPE_CHECKING:
    from wsserver.session.runtime import SessionRuntime

log = logging.getLogger(__name__)


async def recreate_record(runtime: SessionRuntime) -> None:
    """Create the session's record again; its buffered events go back into the journal."""
    session = runtime.session
    record = SessionRecord(
        runtime.session_id,
        runtime.token_hash,
        time.time(),
        epoch=runtime.epoch,
        owner=runtime.context.worker_id,
        conversation=conversation_snapshot(session).to_dict(),
        stream=stream_snapshot(session).to_dict(),
        principal=runtime.principal,
    )
    try:
        await runtime.context.store.create(record)
    except SessionStoreUnavailable:
        log.warning("could not re-create %s in the store", runtime.session_id)
    else:
        # Everything still buffered goes back in, so a resume elsewhere can use it.
        runtime.journal.pending = list(session.replay.after(session.replay.first_seq - 1))
        runtime.journal.conversation_version = session.conversation.version
