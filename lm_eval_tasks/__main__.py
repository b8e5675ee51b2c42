"""Command line: ``python -m lm_eval_tasks`` (also installed as ``lm-eval-tasks``).

python -m lm_eval_tasks --include-path            # the directory for lm_eval --include_path"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

try:
    import lm_eval_tasks.utils  # noqa: F401  (installed as lm_eval_tasks.utils; the repository keeps it in utils/)
except ModuleNotFoundError as missing:
    if not (missing.name or "").startswith("lm_eval_tasks"):
        raise
    sys.exit(
        f"lm_eval_tasks is not installed in this Python ({sys.executable}); what was found is the repository's "
        "lm_eval_tasks/ folder, without its code. Activate the environment the quickstart made "
        "(`. .venv/bin/activate` in the repository) or install the package (`pip install -e .`), then run this again."
    )

from lm_eval_tasks import tasks_dir


def build_parser() -> argparse.ArgumentParser:
    # Imported here, not above: main() starts report's drawing process before these imports.
    from lm_eval_tasks import commands as shared_commands
    from lm_eval_tasks.utils.benchmarks import discover

    parser = argparse.ArgumentParser(
        prog="python -m lm_eval_tasks", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--include-path", action="store_true", help="print the directory for lm_eval --include_path")
    commands = parser.add_subparsers(dest="command")
    shared_commands.register(commands)
    for benchmark in discover():
        if benchmark.register_commands is not None:
            benchmark.register_commands(commands)
    # The list is each command's own usage line, so a command added anywhere is listed.
    usages = (" ".join(sub.format_usage().split()[1:]).replace(" [-h]", "", 1) for sub in commands.choices.values())
    parser.description = "\n".join([__doc__, *usages])
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    drawer = None
    if argv[:1] == ["report"]:
        # Its figures are drawn by another process, started before the commands are imported: it imports matplotlib
        # while this one imports them and reads the run, on a core that would otherwise wait.
        from lm_eval_tasks.utils.plots import Drawer

        drawer = Drawer()
    parser = build_parser()
    args = parser.parse_args(argv)
    args.drawer = drawer
    if args.include_path:
        folder = tasks_dir()
        if not any(Path(folder).glob("*/*.yaml")):
            print(f"error: no task YAML under {folder}: reinstall the package (pip install -e .)", file=sys.stderr)
            return 1
        print(folder)
        return 0
    if args.command is None:
        parser.print_help()
        return 2
    from lm_eval_tasks.utils.data import DataError
    from lm_eval_tasks.utils.files import WriteError

    try:
        return args.func(args)
    except (DataError, WriteError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
