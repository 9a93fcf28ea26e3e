"""What the user said reaches the application: the SDK over a worker with ``--stt whisper``."""

from __future__ import annotations

from tests.wsserver.audio_fixtures import silence
from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.speech_models import spoken, whisper_model, word_errors
from wsserver.client import SessionClient

QUESTION = "Please set a timer for ten minutes."


async def test_a_spoken_turn_answer_carries_its_transcript(start_server: StartServer) -> None:
    whisper_model()  # loaded once for the test process, reused by the worker
    # Transcription only: the simulated LLM answers the words with its own synthetic voice.
    server = await start_server(stt="whisper", answer_tokens=5, audio_max_ahead_ms=60_000)
    async with SessionClient(url_of(server), audio={"sample_rate": 16000}) as client:
        # Faster than real time (the pacing bound is raised): the same audio for the VAD.
        await client.send_audio(silence(300) + spoken(QUESTION) + silence(900))
        result = await client.collect_response(timeout=30)
        assert result.status == "completed"
        assert result.transcript is not None
        assert word_errors(QUESTION, result.transcript) <= 2, result.transcript
        # The events themselves (partial ones, then the final one) are in the response's
        # events, for an application that shows the words as they come.
        heard = [e for e in result.events if e["type"] == "input_audio.transcript"]
        assert [e["final"] for e in heard][-1] is True
        assert {e["response_id"] for e in heard} == {result.response_id}
        assert heard[-1]["text"] == result.transcript
        # A typed turn has none.
        typed = await client.ask("hello")
        assert typed.transcript is None
