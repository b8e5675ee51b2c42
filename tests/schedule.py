"""The order in which pytest-xdist hands out the suite's groups: the longest first.

``bash tests/run.sh`` runs the suite on one worker per core with ``--dist loadgroup``: each group (an
``xdist_group``, tests/conftest.py) goes whole to the next worker that asks for work. Handed out longest first, the
last group to finish is a short one, and both workers end at about the same time; in pytest-xdist's own order (the
groups with the most tests first) the longest groups, which hold few tests, came last and one worker ran on alone
for about a minute. tests/durations.json holds each long group's seconds in the last measured full run; a group
it does not name (a short one, or a new one) keeps its place after them. The file only orders the work: a stale
figure costs time, never a test.

``python -m tests.schedule [JUNIT_XML]`` rewrites tests/durations.json from a full run's JUnit XML (default
``.cache/tests/junit.xml``, which ``bash tests/run.sh`` writes).
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable, Mapping
from pathlib import Path

DURATIONS = Path(__file__).with_name("durations.json")
# A group shorter than this (in the last full run) is not named: its place hardly changes when the run ends.
LONG_GROUP_S = 10.0


def longest_first(groups: Iterable[str], seconds: Mapping[str, float]) -> list[int]:
    """The positions of ``groups`` (one per test, in collection order) reordered: the tests of the groups that
    ``seconds`` names, longest group first, then every other test; a stable sort, so the tests of one group and the
    groups of equal length keep their order."""
    groups = list(groups)
    return sorted(range(len(groups)), key=lambda index: -seconds.get(groups[index], 0.0))


def group_seconds(junit_xml: str) -> dict[str, int]:
    """Seconds per group in a pytest-xdist run's JUnit XML (each test's name ends in ``@<group>``), for the groups
    of at least LONG_GROUP_S seconds, longest first, each rounded to the second."""
    totals: dict[str, float] = {}
    for case in ElementTree.fromstring(junit_xml).iter("testcase"):
        name = case.get("name", "")
        if "@" in name:
            group = name.rsplit("@", 1)[1]
            totals[group] = totals.get(group, 0.0) + float(case.get("time", 0.0))
    long = sorted(((group, total) for group, total in totals.items() if total >= LONG_GROUP_S), key=lambda p: -p[1])
    return {group: round(total) for group, total in long}


def read_durations(path: Path = DURATIONS) -> dict[str, float]:
    """tests/durations.json: group name to seconds."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) for k, v in data.items()
    ):
        raise ValueError(f"{path}: expected an object of group names to seconds")
    return {group: float(value) for group, value in data.items()}


def main(argv: list[str]) -> int:
    source = Path(argv[0] if argv else ".cache/tests/junit.xml")
    seconds = group_seconds(source.read_text(encoding="utf-8"))
    if not seconds:
        print(f"{source}: no test of a group took {LONG_GROUP_S:.0f} s; {DURATIONS} left as it is", file=sys.stderr)
        return 1
    DURATIONS.write_text(json.dumps(seconds, indent=2) + "\n", encoding="utf-8")
    print(f"{DURATIONS}: {len(seconds)} groups, {sum(seconds.values()):.0f} s together")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
