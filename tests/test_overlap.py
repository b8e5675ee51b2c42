"""The cross-benchmark overlap check (utils/overlap.py): the normaliser and the matcher on hand-worked examples, a
property test, and the counts over the shipped data (stated in the MillerQA and PubMedQA READMEs)."""

import json
import re
from pathlib import Path
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st
from lm_eval_tasks.utils import overlap, report, scorecard, stats
from lm_eval_tasks.utils.millerqa.loader import overlap_question
from lm_eval_tasks.utils.overlap import PMID, Item, Overlap, find_overlaps, match_kinds, normalise, run_overlaps
from lm_eval_tasks.utils.results import ScoredRun
from lm_eval_tasks.utils.scoring import ScoredItem

from tests.conftest import REPO, examples


def test_normalise_hand_worked():
    assert normalise("  Is it  TRUE?\tYes,\nor no!  ") == "is it true yes or no"
    assert normalise("A 26-year-old man (1.8 kg)") == "a 26yearold man 18 kg"  # punctuation deleted, not spaced
    assert normalise("ＡＢＣ ﬁle") == "abc file"  # NFKC: full-width letters and the ligature
    assert normalise("Straße") == normalise("STRASSE") == "strasse"  # casefold, not lower
    assert normalise("a\u00a0\u2003b") == "a b"  # Unicode spaces are whitespace
    assert normalise("«¿?»") == normalise("") == ""
    assert normalise("x + y = z") == "x + y = z"  # symbols are not punctuation


def test_match_kinds_hand_worked():
    def item(question, *pmids, component="c"):
        return Item("b", component, "1", question, tuple((PMID, p) for p in pmids))

    assert match_kinds(item("Q one?", "7"), item("different", "7")) == {"id"}
    assert match_kinds(item("Does X cause Y?"), item("does x  cause y")) == {"text"}
    assert match_kinds(item("Does X cause Y?", "7"), item("does x cause y", "7")) == {"id", "text"}
    assert match_kinds(item("Does X cause Y?", "7"), item("Does X cause Z?", "8")) == set()
    # An id matches only within its namespace, and questions that normalise to nothing never match.
    assert match_kinds(Item("b", "c", "1", "q", (("doi", "7"),)), item("r", "7")) == set()
    assert match_kinds(item("?!"), item("...")) == set()


def test_find_overlaps_hand_worked():
    items = [
        Item("a", "x", "1", "Is aspirin safe?", ((PMID, "10"),)),
        Item("a", "x", "2", "Is coffee safe?", ((PMID, "11"),)),
        Item("a", "x", "3", "Unrelated"),
        Item("b", "t", "10", "Is aspirin SAFE", ((PMID, "10"),)),  # id and text
        Item("b", "t", "12", "Is coffee safe", ((PMID, "12"),)),  # text only
        Item("b", "t", "13", "is coffee safe?", ((PMID, "13"),)),  # text only, a second match for a/x/2
        Item("c", "y", "9", "Nothing shared", ((PMID, "11"),)),  # id only
        Item("a", "z", "4", "Unrelated."),  # another component of the same benchmark
    ]
    assert find_overlaps(items) == (
        Overlap(("a", "x"), ("a", "z"), 0, 1, 1, 3, ("3",)),
        Overlap(("a", "x"), ("b", "t"), 1, 2, 2, 3, ("1", "2")),
        Overlap(("a", "x"), ("c", "y"), 1, 0, 1, 3, ("2",)),
        Overlap(("a", "z"), ("a", "x"), 0, 1, 1, 1, ("4",)),
        Overlap(("b", "t"), ("a", "x"), 1, 3, 3, 3, ("10", "12", "13")),
        Overlap(("c", "y"), ("a", "x"), 1, 0, 1, 1, ("9",)),
    )
    assert find_overlaps(items[:3]) == ()  # within one component, nothing is an overlap


def test_millerqa_pubmedqa_question_is_the_question_line():
    text = "QUESTION: Does X help?\nCONTEXTS:\nAbstract text.\nQUESTION: again"
    assert overlap_question("pubmedqa", text) == "Does X help?"
    assert overlap_question("pubmedqa", "Does X help?") == "Does X help?"  # another layout is kept whole
    assert overlap_question("hle", text) == text


_WHITESPACE = st.sampled_from([" ", "  ", "\t", "\n", "\u00a0", " \r\n "])
_WORD = st.text(st.characters(codec="ascii", categories=("L", "N", "P", "S")), min_size=1, max_size=8)


def _vary(words, spaces, flips):
    """The words joined by the given whitespace runs, with the case of ASCII letters flipped where ``flips`` says."""
    text = "".join(word + space for word, space in zip(words, spaces))
    return "".join(c.swapcase() if flip else c for c, flip in zip(text, flips + [False] * len(text)))


@settings(max_examples=examples(200), deadline=None)
@given(
    words=st.lists(_WORD, min_size=1, max_size=6),
    spaces_a=st.lists(_WHITESPACE, min_size=6, max_size=6),
    spaces_b=st.lists(_WHITESPACE, min_size=6, max_size=6),
    flips=st.lists(st.booleans(), max_size=60),
    other=st.text(max_size=30),
    pmids=st.lists(st.sampled_from(["1", "2", "3"]), max_size=2),
)
def test_matching_is_symmetric_and_ignores_whitespace_and_case(words, spaces_a, spaces_b, flips, other, pmids):
    text = _vary(words, spaces_a, [])
    varied = "  " + _vary(words, spaces_b, flips)
    assert normalise(varied) == normalise(text)
    a = Item("a", "x", "1", text, tuple((PMID, p) for p in pmids))
    b = Item("b", "y", "2", varied)
    c = Item("c", "z", "3", other, ((PMID, "1"),))
    for left, right in ((a, b), (a, c), (b, c)):
        assert match_kinds(left, right) == match_kinds(right, left)
    assert ("text" in match_kinds(a, b)) == bool(normalise(text))
    found = {(o.source, o.other) for o in find_overlaps([a, b, c])}
    assert found == {(other, source) for source, other in found}


# What the check finds in the shipped data, worked out once and stated in both READMEs: (source, other) ->
# (by id, by text, matched, items of source).
SHIPPED = {
    (("millerqa", "pubmedqa"), ("pubmedqa_atlas", "test")): (498, 498, 498, 998),
    (("pubmedqa_atlas", "test"), ("millerqa", "pubmedqa")): (498, 498, 498, 500),
    (("millerqa", "pubmedqa"), ("pubmedqa_atlas", "train_pool")): (500, 500, 500, 998),
    (("pubmedqa_atlas", "train_pool"), ("millerqa", "pubmedqa")): (500, 500, 500, 500),
    (("millerqa", "global_mmlu"), ("millerqa", "mmlupro_med")): (0, 23, 23, 705),
    (("millerqa", "mmlupro_med"), ("millerqa", "global_mmlu")): (0, 26, 26, 252),
    (("millerqa", "medethicsqa"), ("millerqa", "metamedqa")): (0, 1, 1, 928),
    (("millerqa", "metamedqa"), ("millerqa", "medethicsqa")): (0, 1, 1, 658),
    (("millerqa", "medethicsqa"), ("millerqa", "mmlupro_med")): (0, 1, 1, 928),
    (("millerqa", "mmlupro_med"), ("millerqa", "medethicsqa")): (0, 2, 2, 252),
    (("medexqa", "clinical_psychologist_test"), ("medexqa", "occupational_therapist_test")): (0, 1, 1, 106),
    (("medexqa", "occupational_therapist_test"), ("medexqa", "clinical_psychologist_test")): (0, 1, 1, 189),
}


def test_the_shipped_data_overlaps(shared_data):
    found = overlap.check(shared_data)
    assert {(o.source, o.other): (o.by_id, o.by_text, o.matched, o.total) for o in found.overlaps} == SHIPPED
    assert found.left_out == (
        "factbench: declares no question items to compare",
        "medfact_bench: declares no question items to compare",
        f"millerqa: medbullets: not redistributed upstream, and not rebuilt in {shared_data}",
    )
    assert sum(n for (benchmark, _), n in found.counts.items() if benchmark == "millerqa") == 9406  # 9594 - 188
    # Independently of the check: the PMIDs of MillerQA's file against the official test ids.
    curated = json.loads((shared_data / "millerqa/curated/pubmedqa/pubmedqa.json").read_text(encoding="utf-8"))
    test_ids = json.loads((shared_data / "pubmedqa/test_ground_truth.json").read_text(encoding="utf-8"))
    missing = set(test_ids) - {str(item["id"]) for item in curated}
    assert missing == {"23321509", "24340838"}  # excluded by MillerQA's QC (_dropped_items.csv: MALFORMED)
    test = found.between(("pubmedqa_atlas", "test"), ("millerqa", "pubmedqa"))
    assert set(test.item_ids) == set(test_ids) - missing


def test_both_readmes_state_the_counts():
    for folder in ("millerqa", "pubmedqa_atlas"):
        readme = (REPO / "lm_eval_tasks" / folder / "README.md").read_text(encoding="utf-8")
        readme = " ".join(readme.replace("**", "").split())
        assert "498 of the 500" in readme and "23321509 and 24340838" in readme, folder


def test_run_overlaps_hand_worked():
    sections = {
        "p": ("pubmed", [((PMID, "1"),), ((PMID, "2"),), ((PMID, "3"),), ()]),
        "p_gen": ("pubmed", [((PMID, "1"),)]),  # the same benchmark: another protocol, not an overlap
        "m": ("miller", [((PMID, "2"),), ((PMID, "2"),), ((PMID, "9"),), (), ()]),
        "x": ("other", [(("doi", "1"),)]),  # another namespace
    }
    assert run_overlaps(sections) == [
        {"sections": ["m", "p"], "by": [PMID], "items": {"m": 2, "p": 1}, "of": {"m": 5, "p": 4}}
    ]
    assert run_overlaps({"a": ("a", [((PMID, "1"),)]), "b": ("b", [((PMID, "2"),)])}) == []


def _item(task, component, item_id):
    return ScoredItem(task, 0, "h", component, "A", "A", 1.0, item_id=item_id)


def test_a_run_holding_both_names_the_overlap():
    sections = {
        "millerqa": [
            _item("millerqa_pubmedqa", "pubmedqa", "21645374"),
            _item("millerqa_pubmedqa", "pubmedqa", "16418930"),
            _item("millerqa_hle", "hle", "21645374"),  # not a PMID: only pubmedqa's ids are
        ],
        "pubmedqa_atlas_n100": [
            _item("pubmedqa_atlas_n100", "yes", "21645374"),
            _item("pubmedqa_atlas_n100", "no", "1"),
        ],
        "medexqa": [_item("medexqa_be", "BE", "1")],
    }
    scored = ScoredRun(Path("r.json"), {}, {k: SimpleNamespace(items=v) for k, v in sections.items()}, (), ())
    found = scored.overlaps()
    assert found == [
        {
            "sections": ["millerqa", "pubmedqa_atlas_n100"],
            "by": [PMID],
            "items": {"millerqa": 1, "pubmedqa_atlas_n100": 1},
            "of": {"millerqa": 3, "pubmedqa_atlas_n100": 2},
        }
    ]
    line = (
        "millerqa and pubmedqa_atlas_n100 share items (by pmid): 1 of millerqa's 3 and 1 of pubmedqa_atlas_n100's 2; "
        "an average over both counts them twice."
    )
    assert scorecard.overlap_line(found[0]) == line
    page = {"benchmarks": {}, "unreported_tasks": [], "run": {}, "overlaps": found}
    page["bootstrap"] = stats.bootstrap_description(stratified_by={})
    assert f"**{line}**" in report.to_markdown(page)
    shown = re.findall(r'<p class="caveat overlap">(.*?)</p>', scorecard.render_html(page).decode())
    assert shown == [line.replace("'", "&#39;")]
