"""The Realtime settings only the dialect holds, kept per worker for a resume."""

from __future__ import annotations

from collections import OrderedDict

from protocol.dialects.realtime.session_config import SessionConfig

MAX_KEPT_CONFIGS = 16384


class KeptConfigs:
    """Each Realtime session's settings as its client last set them, by session id.

    A resumed connection takes what the native session holds (instructions, tools,
    modalities, turn detection) from the session itself, wherever it resumes; what
    only the dialect knows (voice, model, transcription model, the session's
    ``max_output_tokens``) is found here on the same worker, and is the default on
    another. Bounded, the oldest forgotten first.
    """

    def __init__(self, limit: int = MAX_KEPT_CONFIGS) -> None:
        self.limit = limit
        self._configs: OrderedDict[str, SessionConfig] = OrderedDict()

    def keep(self, config: SessionConfig) -> None:
        """Remember ``config`` for its session, less what the native session holds.

        A resume reads instructions and tools from the session itself; kept here they
        would be up to ~100 KB of instructions and 128 tools per entry, for 16384
        sessions, ended or not.
        """
        config = config.updated(instructions="", tools=())
        self._configs[config.session_id] = config
        self._configs.move_to_end(config.session_id)
        while len(self._configs) > self.limit:
            self._configs.popitem(last=False)

    def get(self, session_id: str) -> SessionConfig | None:
        """The settings kept for ``session_id``, if any."""
        return self._configs.get(session_id)


KEPT_CONFIGS = KeptConfigs()
"""One per worker process: resumes land on the worker that holds the session."""
