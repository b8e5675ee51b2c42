"""Time loading + validating a full-size (14,274-row) MedFact-Bench file, per format.

The file is synthetic (real SciFact text reused, labels assigned in blocks) but has the
published component and label counts, so the full-set checks run. Usage:

    python examples/benchmark_medfact_loading.py --shared ../shared/data
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from lm_eval_tasks.utils.files import write_jsonl
from lm_eval_tasks.utils.medfact_bench import constants, loader, tasks

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the synthetic rows live with the tests

from tests.medfact_bench.synthetic import synthetic_medfact_rows  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = synthetic_medfact_rows(args.shared, constants.PUBLISHED_COUNTS, constants.LABEL_TOTALS)
    with tempfile.TemporaryDirectory() as tmp:
        files = {"jsonl": write_jsonl(rows, Path(tmp) / "jsonl" / "medfact_bench" / "m.jsonl")}
        parquet = Path(tmp) / "parquet" / "medfact_bench" / "m.parquet"
        parquet.parent.mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(rows), parquet)
        files["parquet"] = parquet
        for kind, path in files.items():
            data_dir = str(path.parent.parent)
            for repeat in range(args.repeats):
                loader.load_file.cache_clear()
                start = time.perf_counter()
                loaded = loader.load(data_dir)
                validated = time.perf_counter()
                sizes = {
                    c: len(tasks.custom_dataset(component=c, data_dir=data_dir)["test"])
                    for c in constants.PUBLISHED_COUNTS
                }
                built = time.perf_counter()
                assert len(loaded.rows) == 14274 and sizes == constants.PUBLISHED_COUNTS
                print(
                    f"{kind:8s} run {repeat + 1}: read+validate {validated - start:.2f} s, "
                    f"+ five task datasets {built - validated:.2f} s, total {built - start:.2f} s"
                )


if __name__ == "__main__":
    main()
