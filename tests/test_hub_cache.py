"""Offline means the cache: with HF_HUB_OFFLINE=1 a benchmark is read from the pinned revision in the local
Hugging Face cache (as a run online leaves it), and only a cache without it gives the how-to-supply-data message.

The cache is built here in the hub client's own layout (``datasets--owner--name/blobs``, ``snapshots/<revision>``
linking to the blobs, ``refs/main``) from the real files in shared/data; the hub route's items must equal the
local route's. Each load runs in a fresh Python, since the hub client reads HF_HUB_CACHE once, at import.
"""

import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from lm_eval_tasks.utils.medexqa.constants import HUB_REPO as MEDEXQA_REPO
from lm_eval_tasks.utils.medexqa.constants import HUB_REVISION as MEDEXQA_REVISION
from lm_eval_tasks.utils.medexqa.constants import SPECIALTIES
from lm_eval_tasks.utils.pubmedqa_atlas.constants import HUB, TEST_IDS_FILE, UPSTREAM_COMMIT

from tests.conftest import REPO
from tests.offline import pqa_labeled_rows

# The hub's README card declares its configs; pqa_labeled is one folder of parquet files.
PUBMEDQA_CARD = """---
configs:
- config_name: pqa_labeled
  data_files:
  - split: train
    path: pqa_labeled/train-*
---
# PubMedQA
"""

OFFLINE_LOADS = r"""
import json, sys
from lm_eval_tasks.utils.data import DataError
from lm_eval_tasks.utils.medexqa import loader as medexqa
from lm_eval_tasks.utils.medfact_bench import loader as medfact
from lm_eval_tasks.utils.pubmedqa_atlas import loader as pubmedqa

shared = sys.argv[1]
out = {}
hub = pubmedqa.load()
out["pubmedqa"] = [[item.doc() for item in hub.test], [item.doc() for item in pubmedqa.load(shared).test]]
out["pubmedqa_source"] = hub.source
columns = ("question", "A", "B", "C", "D", "answer")
out["medexqa"] = [
    [{c: row[c] for c in columns} for row in medexqa.load(specialty=specialty, data_dir=folder)]
    for specialty in ("CP",)
    for folder in (None, shared)
]
for name, call in (("medfact_bench", lambda: medfact.load()), ("medexqa_dev", lambda: medexqa.load(split="dev"))):
    try:
        call()
        out[name] = "loaded"
    except DataError as exc:
        out[name] = str(exc)
print(json.dumps(out))
"""


def cache_repo(hub_cache: Path, repo_id: str, revision: str, files: dict[str, bytes]) -> None:
    """``files`` as the hub client caches a dataset repository at ``revision``."""
    repo = hub_cache / f"datasets--{repo_id.replace('/', '--')}"
    for name, content in files.items():
        blob = repo / "blobs" / hashlib.sha256(content).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(content)
        link = repo / "snapshots" / revision / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(revision, encoding="utf-8")


def pubmedqa_parquet(shared_data: Path) -> bytes:
    """ori_pqal.json's 1,000 items in the hub's pqa_labeled schema."""
    items = json.loads((shared_data / "pubmedqa" / "ori_pqal.json").read_text(encoding="utf-8"))
    rows = pqa_labeled_rows(items)
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buffer)
    return buffer.getvalue()


def test_offline_loads_serve_the_pinned_revision_from_the_hub_cache(shared_data, tmp_path):
    hub_cache = tmp_path / "hub"
    cache_repo(
        hub_cache,
        HUB.repo_id,
        HUB.revision,
        {
            "README.md": PUBMEDQA_CARD.encode(),
            "pqa_labeled/train-00000-of-00001.parquet": pubmedqa_parquet(shared_data),
        },
    )
    # A cached snapshot of another revision is never read in place of the pinned one.
    cache_repo(hub_cache, HUB.repo_id, "0" * 40, {"README.md": b"---\n---\n"})
    medexqa_file = SPECIALTIES["CP"].path("test")
    cache_repo(
        hub_cache, MEDEXQA_REPO, MEDEXQA_REVISION, {medexqa_file: (shared_data / "medexqa" / medexqa_file).read_bytes()}
    )
    # The test ids come from GitHub at a pinned commit, cached by the package itself.
    ids = tmp_path / "medeval" / "pubmedqa" / UPSTREAM_COMMIT / TEST_IDS_FILE
    ids.parent.mkdir(parents=True)
    ids.write_bytes((shared_data / "pubmedqa" / TEST_IDS_FILE).read_bytes())
    env = {k: v for k, v in os.environ.items() if k not in ("MEDEVAL_DATA_DIR", "HF_HOME")}
    env.update(
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        HF_HUB_CACHE=str(hub_cache),
        HF_DATASETS_CACHE=str(tmp_path / "datasets"),
        MEDEVAL_CACHE_DIR=str(tmp_path / "medeval"),
    )
    done = subprocess.run(
        [sys.executable, "-c", OFFLINE_LOADS, str(shared_data)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.splitlines()[-1])
    from_cache, local = out["pubmedqa"]
    assert len(from_cache) == 500 and from_cache == local
    assert out["pubmedqa_source"].startswith(f"hf://datasets/qiaojin/PubMedQA@{HUB.revision} (config pqa_labeled)")
    from_cache, local = out["medexqa"]
    assert len(from_cache) == 106 and from_cache == local  # the paper's 106 clinical psychology items
    # Not in the cache: today's message, saying where it looked.
    for name, repo in (("medfact_bench", "ncbi/MedFact-Bench"), ("medexqa_dev", MEDEXQA_REPO)):
        message = out[name]
        assert message.startswith(f"No data for '{name.removesuffix('_dev')}': ")
        assert f"hf://datasets/{repo}@" in message
        assert f"HF_HUB_OFFLINE is set, and the local Hugging Face cache ({hub_cache}) holds no copy" in message
        assert "--metadata data_dir=DIR" in message
