"""The manifest of pinned external assets (utils/assets.py) and ASSETS.md."""

import re

from lm_eval_tasks.utils.assets import manifest
from lm_eval_tasks.utils.benchmarks import discover
from lm_eval_tasks.utils.models import ASSETS as MODEL_ASSETS

from tests.conftest import REPO


def test_assets_md_is_current():
    assert (REPO / "ASSETS.md").read_text(encoding="utf-8") == manifest(), (
        "ASSETS.md is out of date: python -m lm_eval_tasks assets --write ASSETS.md"
    )


def test_every_benchmark_declares_its_assets_pinned():
    for benchmark in discover():
        assert benchmark.assets, f"{benchmark.name} declares no asset"
        for asset in benchmark.assets:
            if asset.source.startswith(("hf://", "github.com/")):  # a commit, alone or inside a URL
                assert re.search(r"\b[0-9a-f]{40}\b", asset.revision), (benchmark.name, asset.name, asset.revision)
            assert asset.licence and asset.name
    assert all(re.fullmatch(r"\d+(\.\d+)+", asset.revision) for asset in MODEL_ASSETS)  # package versions


def test_the_readme_links_the_manifest():
    assert "(ASSETS.md)" in (REPO / "README.md").read_text(encoding="utf-8")
