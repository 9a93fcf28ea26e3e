"""``python -m loadtest.send_path`` end to end at a tiny load: three servers measured in
one round, the report written with same-round ratios (no figure is judged: a benchmark)."""

from __future__ import annotations

import json
from pathlib import Path

from loadtest.send_path.__main__ import main


def test_a_tiny_run_measures_bare_worker_and_fast_in_one_round(tmp_path: Path) -> None:
    report = tmp_path / "send_path.json"
    argv = ["--quick", "--sessions", "4", "--clients", "1", "--warmup", "0.3", "--duration", "1"]
    argv += ["--answer-tokens", "20", "--decode-rate", "100", "--rounds", "1"]
    assert main([*argv, "--report", str(report)]) == 0
    data = json.loads(report.read_text())
    assert data["benchmark"] == "send_path"
    (round_one,) = data["results"]["rounds"]
    assert set(round_one) == {"bare", "worker", "fast", "session_work", "socket_floor", "floor"}
    for name in ("bare", "worker", "fast"):
        assert round_one[name]["sessions_opened"] == 4
        assert round_one[name]["tokens_per_s"] > 0
    # The fast round really ran on the fast path (/stats says which engine served it).
    assert round_one["fast"]["server_stats_after"]["ws_engine"] == "fast"
    assert round_one["worker"]["server_stats_after"]["ws_engine"] == "websockets"
    # The socket-free session work ran as many sessions and pulled frames from them.
    work = round_one["session_work"]
    assert work["sessions"] == 4
    assert work["frames"] > 0
    assert work["cpu_us_per_frame"] > 0
    # The socket floor wrote frames to as many connections, and the least a token costs
    # is the two socket-free figures added up, against the same round's bare server.
    floor = round_one["socket_floor"]
    assert floor["sessions"] == 4
    assert floor["frames"] > 0
    assert floor["cpu_us_per_frame"] > 0
    least = round_one["floor"]["cpu_us_per_token"]
    assert least == round(work["cpu_us_per_frame"] + floor["cpu_us_per_frame"], 2)
    bare = round_one["bare"]["server_cpu_us_per_token"]
    assert round_one["floor"]["most_tokens_per_core_vs_bare"] == round(bare / least, 2)
    (share,) = [f for f in data["figures"] if f["name"] == "session work per token, no socket"]
    assert share["baseline_name"] == "bare CPU per token"
    assert share["ratio"] > 0
    fast_vs_bare = data["figures"][0]
    assert fast_vs_bare["name"] == "fast: delivered tokens/s"
    assert fast_vs_bare["ratio"] > 0
