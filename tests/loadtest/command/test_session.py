"""The seq ledger that judges handoff and reconnect storms: holes and doubles are counted."""

from __future__ import annotations

from loadtest.command.session import SeqLedger


def ledger_of(*seqs: int) -> SeqLedger:
    ledger = SeqLedger()
    for seq in seqs:
        ledger.add(seq)
    return ledger


def test_an_unbroken_run_has_nothing_lost_or_doubled() -> None:
    ledger = ledger_of(1, 2, 3, 4)
    assert (ledger.last, ledger.lost(), ledger.doubled()) == (4, 0, 0)


def test_a_hole_is_lost_and_a_replayed_seq_is_doubled() -> None:
    ledger = ledger_of(1, 2, 4, 4, 5, 2)
    assert ledger.lost() == 1  # 3 never came
    assert ledger.doubled() == 2  # 4 and 2 came twice


def test_a_second_done_of_one_response_is_doubled() -> None:
    ledger = ledger_of(1, 2)
    ledger.done_per_response["resp_1"] += 2
    assert ledger.doubled() == 1


def test_nothing_received_is_nothing_lost() -> None:
    assert (ledger_of().lost(), ledger_of().doubled()) == (0, 0)
