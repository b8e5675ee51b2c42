"""How long and how much memory a hostile judge server costs the judge client, against the fake server.

Four replies, each a failed call: a body dripped one byte every 0.2 s, headers dripped the same way,
a 50 MB body and a gzip bomb (700 MB of zeros in about 0.7 MB). The goal: each ends in about
``timeout`` seconds (the drips) or at once (the size cap), with memory a few times the cap, never
the reply's size. Run from the repository root: ``python examples/judge_limits.py [--timeout 5]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the fake server lives with the tests

from lm_eval_tasks.utils.openai_client import ChatClient, ChatEndpoint  # noqa: E402

from tests.fake_openai import FakeChatServer, FakeReply  # noqa: E402


def gzip_bomb(megabytes: int) -> bytes:
    packer, zeros = zlib.compressobj(9, zlib.DEFLATED, 31), bytes(2**20)
    return b"".join(packer.compress(zeros) for _ in range(megabytes)) + packer.flush()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--timeout", type=float, default=5.0, help="the endpoint's timeout (default 5 s)")
    args = parser.parse_args()
    chat = FakeReply.chat("True " * 200).body
    bomb = gzip_bomb(700)
    replies = {
        "body dripped (0.2 s per byte)": FakeReply(200, chat, drip=0.2),
        "headers dripped (0.2 s per byte)": FakeReply(200, chat, drip=0.2, drip_headers=True),
        "50 MB body": FakeReply(200, FakeReply.chat("x" * (50 * 2**20)).body.encode()),  # bytes: sent as they are
        f"gzip bomb ({len(bomb) / 2**20:.2f} MB -> 700 MB)": FakeReply(200, bomb, {"Content-Encoding": "gzip"}),
    }
    results = {}
    for name, reply in replies.items():
        server = FakeChatServer(lambda messages, model, reply=reply: reply)
        client = ChatClient(
            ChatEndpoint(server.base_url, "judge", api_key_env=None, timeout=args.timeout, max_retries=0)
        )
        tracemalloc.start()
        start = time.perf_counter()
        result = client.complete([{"role": "user", "content": "Is it supported?"}])
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        server.close()
        results[name] = {"seconds": round(seconds, 2), "peak_mib": round(peak / 2**20, 1), "error": result.error}
        print(f"{name}: {seconds:.2f} s, peak {peak / 2**20:.1f} MiB traced: {result.error}", flush=True)
    print(json.dumps({"timeout": args.timeout, "max_response_bytes": client.endpoint.max_response_bytes, **results}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
