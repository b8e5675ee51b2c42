"""MillerQA commands."""

from __future__ import annotations

import argparse


def _rebuild_medbullets(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils.millerqa.medbullets import rebuild_medbullets

    for path in rebuild_medbullets(args.source, args.out):
        print(path)
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    medbullets = commands.add_parser(
        "millerqa-rebuild-medbullets",
        help="rebuild MillerQA's withheld MedBullets file from your copy of its public source",
    )
    medbullets.add_argument(
        "--source",
        required=True,
        help="the 308-row LangAGI-Lab/medbullets_op5 test split (Parquet, JSONL, JSON or CSV with "
        "question, opa..ope, answer_idx)",
    )
    medbullets.add_argument(
        "--out",
        required=True,
        help="the data directory whose millerqa/{curated,pre_qc}/medbullets/item_ids.csv select the "
        "items (or a clone of KatherLab/MillerQA); medbullets.json is written beside them",
    )
    medbullets.set_defaults(func=_rebuild_medbullets)
