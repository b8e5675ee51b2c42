"""Figures draw every label: in a font with its glyphs when one is installed, else as escapes, never empty boxes
(matplotlib warns "Glyph ... missing from font(s)" for each box it draws)."""

import warnings

import pytest
from lm_eval_tasks.utils import plots

CJK_LABEL = "模型-A"  # "model-A"
ESCAPED = "\\u6a21\\u578b-A"


def _missing_glyph_warnings(draw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        draw()
    return [str(w.message) for w in caught if "missing from font" in str(w.message)]


def _figures(label):
    """A forest plot, a confusion matrix and a reliability diagram, each with ``label`` in its texts."""
    rows = [plots.Row(label, 0.5, 0.4, 0.6), plots.Row("run-2", 0.3)]
    plots.dot_whisker_figure(rows, f"{label} title", f"{label} axis", {label: [0.7, None]}).png()
    bench = {
        "title": label,
        "confusion_matrix": {"counts": [[1, 0], [0, 1]], "gold": [label, "b"], "predicted": ["a", label]},
    }
    plots.confusion_figure(bench).png()
    plots.reliability_figure({"reliability": [], "source": label}, label).png()


@pytest.fixture
def no_fallback_font(monkeypatch):
    """As on a machine with no font but matplotlib's own: DejaVu Sans, which has no CJK glyph."""
    monkeypatch.setattr(plots, "font_families", lambda: ("DejaVu Sans",))


def test_without_a_cjk_font_a_label_is_drawn_as_its_escapes(no_fallback_font):
    assert plots.drawable(CJK_LABEL) == ESCAPED
    assert plots.drawable("naïve Ω\n$x$") == "naïve Ω\n$x$"  # DejaVu Sans has these: drawn as they are
    assert plots.drawable("bad \udce9 byte") == "bad \\udce9 byte"  # a lone surrogate (not UTF-8)
    assert _missing_glyph_warnings(lambda: _figures(CJK_LABEL)) == []
    # The check can fail: the same label drawn unescaped in DejaVu Sans is drawn as boxes, and matplotlib says so.
    import matplotlib.pyplot as plt

    def unescaped():
        fig, ax = plt.subplots()
        ax.set_title(CJK_LABEL, family="DejaVu Sans")
        fig.savefig(__import__("io").BytesIO(), format="png")
        plt.close(fig)

    assert len(_missing_glyph_warnings(unescaped)) == 2  # one per character


def test_with_a_cjk_font_installed_a_label_is_drawn_as_it_is():
    families = plots.font_families()
    if not any("CJK" in family for family in families):
        pytest.skip("no CJK font installed (Debian: apt-get install -y fonts-noto-cjk)")
    assert families[0] == "DejaVu Sans"
    assert plots.drawable(CJK_LABEL) == CJK_LABEL
    assert _missing_glyph_warnings(lambda: _figures(CJK_LABEL + " 中文")) == []
