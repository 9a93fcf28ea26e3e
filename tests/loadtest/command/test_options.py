"""One configuration for every scenario: flags, a TOML or JSON file, and what is refused."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from loadtest.command.catalog import SCENARIOS, listing
from loadtest.command.main import build_parser, main
from loadtest.command.options import SettingsError, settings_from


def parsed(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["chat", *argv])


def test_a_toml_file_sets_the_keys_and_a_flag_wins(tmp_path: Path) -> None:
    config = tmp_path / "load.toml"
    config.write_text("sessions = 3\nduration = 2.5\nanswer-tokens = 12\nmix = {chat = 1.0}\n")
    settings = settings_from(parsed("--config", str(config), "--sessions", "5"), "chat")
    assert (settings.sessions, settings.duration, settings.answer_tokens) == (5, 2.5, 12)
    assert settings.mix == {"chat": 1.0}
    assert settings.report.name.startswith("chat-") and settings.report.suffix == ".json"


def test_a_json_file_is_read_the_same(tmp_path: Path) -> None:
    config = tmp_path / "load.json"
    config.write_text(json.dumps({"sessions": 2, "url": "ws://127.0.0.1:1/v1", "seed": 7}))
    settings = settings_from(parsed("--config", str(config)), "chat")
    assert (settings.sessions, settings.url, settings.seed) == (2, "ws://127.0.0.1:1/v1", 7)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("sessions = 3\nsesions = 4\n", "unknown keys ['sesions']"),
        ("sessions = 0\n", "sessions must be 1..20000"),
        ('url = "http://example"\n', "url must start with ws://"),
        ("duration = -1\n", "duration must be in"),
        ("mix = {chat = 1, fuzz = 2}\n", "mix weights are for"),
        ("sessions = [", "config file"),
        ('sessions = "many"\n', "sessions: want int"),
    ],
)
def test_a_bad_configuration_is_refused_by_name(tmp_path: Path, content: str, message: str) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(content)
    with pytest.raises(SettingsError, match=message.replace("[", r"\[").replace("]", r"\]")):
        settings_from(parsed("--config", str(config)), "chat")


def test_the_mix_flag_is_parsed_into_weights() -> None:
    settings = settings_from(
        build_parser().parse_args(["mixed", "--mix", "chat=3, handoff=1"]), "mixed"
    )
    assert settings.mix == {"chat": 3.0, "handoff": 1.0}


def test_list_names_every_scenario_and_the_benchmarks(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list"]) == 0
    out = capsys.readouterr().out
    for name in [*SCENARIOS, "stream", "store", "router", "voice-capacity", "fuzz", "realtime"]:
        assert f"  {name} " in out, name
    assert out.strip() == listing()


def test_an_unknown_scenario_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["nonesuch"]) == 2
    assert "unknown scenario 'nonesuch'" in capsys.readouterr().err
