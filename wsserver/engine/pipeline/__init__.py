"""The voice pipeline: speech-to-text, then any LLM engine, then text-to-speech, as one engine.

:class:`~wsserver.engine.pipeline.engine.PipelineEngine` wraps an
:class:`~wsserver.engine.base.Engine`; the speech parts are small interfaces
(:mod:`.stt`, :mod:`.tts`) with a local implementation (faster-whisper,
piper) and an OpenAI-compatible HTTP one each. See docs/VOICE_PIPELINE.md.
"""
