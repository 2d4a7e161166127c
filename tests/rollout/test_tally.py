"""Readers' notes that add up over shards: a tally drawn from two shards' data says what one read of both says."""

from __future__ import annotations

import pickle

from rlvitals.rollout import tally
from rlvitals.rollout.readers import rollouts_from_records
from rlvitals.words import Words, in_lang


def test_two_shards_bad_values_add_up_and_keep_the_first_place() -> None:
    a = tally.counted_values(("length", True), 2, "1.jsonl:4", "x")
    b = tally.counted_values(("length", True), 3, "2.jsonl:1", "y")
    (note,) = tally.merged([[a], [b]])
    assert note == ("5 value(s) of 'length' are not whole numbers (e.g. 1.jsonl:4: 'x'); "
                    "they were read as unknown (null)")
    assert in_lang(note, "zh") == "'length' 有 5 个值不是整数（如 1.jsonl:4：'x'）；这些值读作未知（空值）"


def test_group_sizes_seen_in_two_shards_vary_though_each_shard_is_even() -> None:
    one, two = tally.sizes_tally(None, (4,)), tally.sizes_tally(None, (8,))
    assert tally.merged([[one]]) == []  # one size: nothing to say
    assert tally.merged([[one], [two]]) == ["group sizes vary: 4, 8 samples"]
    odd = tally.merged([[tally.sizes_tally(4, (10, 1, ((3, "2", 3),)))], [tally.sizes_tally(4, (10, 2, ((1, "0", 2),
                                                                                                  (5, "1", 5))))]])
    assert odd == ["3 of 20 groups do not have group_size=4 samples (step 1 group 0: 2; step 3 group 2: 3; "
                   "step 5 group 1: 5)"]


def test_the_score_range_is_the_whole_inputs() -> None:
    binary = tally.correct_tally((False, 10, 0, 0.0, 1.0))
    wide = tally.correct_tally((False, 5, 0, 0.0, 4.5))
    assert tally.merged([[binary]]) == ["correctness taken from the score (correct = score >= 1.0), as scores lie in "
                                        "[-1, 1] like a 0/1 outcome reward; give a correctness column if that is wrong"]
    (note,) = tally.merged([[binary], [wide]])
    assert note.startswith("scores range over [0, 4.5], not a 0/1 reward")
    assert not tally.binary_scores(tally.correct_tally((False, 15, 0, 0.0, 4.5)).data)


def test_file_notes_come_first_and_plain_notes_once() -> None:
    plain = Words("the data has no step column: every rollout is put at step 0",
                  "数据没有步数列：所有 rollout 都记在第 0 步")
    f1, f2 = tally.file_note(Words("1.jsonl holds no samples", "x")), tally.file_note(Words("2.jsonl holds no samples",
                                                                                           "y"))
    late = tally.text_steps([3])
    got = tally.merged([[plain, f1, late], [plain, f2, tally.counted_bools("correct", 1)]])
    assert got[:2] == [f1, f2] and got[3] == plain and got[4] == late and len(got) == 5
    assert got[2].startswith("1 value(s) of 'correct'")


def test_notes_survive_pickling_with_their_chinese_and_data() -> None:
    """Ray hands shard results between processes by pickle."""
    note = tally.text_steps([2, 1])
    back = pickle.loads(pickle.dumps([note, tally.file_note(Words("a", "甲"))]))
    assert isinstance(back[0], tally.Tally) and back[0].data == (1, 2) and back[0] == note
    assert in_lang(back[0], "zh") == in_lang(note, "zh") and isinstance(back[1], tally.FileNote)
    assert in_lang(back[1], "zh") == "甲"


def test_a_readers_notes_hold_no_empty_tally() -> None:
    rs = rollouts_from_records([{"step": 1, "prompt": "q", "response": "a", "score": 1.0, "correct": True}])
    assert all(str(n) for n in rs.notes)
    assert not any(isinstance(n, tally.Tally) and n.key[0] == "correct" for n in rs.notes)
