"""Serves the digit classifier on Ray Serve through rtx and through iree.runtime, side by side, and
load-tests them over HTTP on 127.0.0.1: throughput and p50/p99 latency for each.

    python load_test.py [--backends rtx,iree] [--replicas 2] [--concurrency 8] [--seconds 15]
                        [--requests 20000] [--rounds 2]

The applications (``--backends``: ``rtx``, ``rtx-async``, ``iree``; see digits_app.py) run in one
local Ray instance (``ray.init``, no cluster of our own), each with the same number of replicas, on
routes named after them. A round loads each route in turn, the order reversed every other round;
each load is closed-loop: ``--concurrency`` clients, each sending its next request when the last
one answered, for ``--seconds`` or ``--requests`` requests, whichever comes first, after a warm-up.
Every answer is checked: the predicted digit must be the sample's. The figures of every round and
their medians are printed, and written as JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import aiohttp
import numpy as np
import ray
from ray import serve

sys.path.insert(0, str(Path(__file__).resolve().parent))
from digits_app import app  # noqa: E402

MODELS = Path(__file__).resolve().parents[3] / "models" / "digits"


def samples() -> List[Dict[str, Any]]:
    """The ten sample digits as request bodies, with the digit each must be classified as."""
    return [{"pixels": np.load(MODELS / f"digit_{d}.npy").reshape(-1).tolist(), "digit": d} for d in range(10)]


async def load(url: str, bodies: List[Dict[str, Any]], concurrency: int, seconds: float, limit: int) -> Dict[str, Any]:
    """Closed-loop load on ``url``: latencies of every answered request, all checked."""
    latencies: List[float] = []
    wrong = 0
    deadline = time.perf_counter() + seconds
    sent = 0

    async def client(session: aiohttp.ClientSession, first: int) -> None:
        nonlocal sent, wrong
        i = first
        while sent < limit and time.perf_counter() < deadline:
            sent += 1
            body = bodies[i % len(bodies)]
            i += 1
            started = time.perf_counter()
            async with session.post(url, json={"pixels": body["pixels"]}) as response:
                answer = await response.json() if response.status == 200 else None
            latencies.append(time.perf_counter() - started)
            if answer is None or answer["digit"] != body["digit"]:
                wrong += 1

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        started = time.perf_counter()
        await asyncio.gather(*(client(session, c) for c in range(concurrency)))
        elapsed = time.perf_counter() - started
    ordered = sorted(latencies)
    return {
        "requests": len(ordered),
        "wrong": wrong,
        "seconds": elapsed,
        "throughput": len(ordered) / elapsed,
        "p50_ms": 1000 * ordered[len(ordered) // 2],
        "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="rtx,iree", help="comma-separated: rtx, rtx-async, iree")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=15.0, help="per load (default 15)")
    parser.add_argument("--requests", type=int, default=20000, help="at most this many per load")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of warm-up per load")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--device", default="local-sync")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    backends = args.backends.split(",")

    ray.init(include_dashboard=False, log_to_driver=False)
    serve.start(http_options={"host": "127.0.0.1", "port": args.port})
    for backend in backends:
        serve.run(
            app(backend, str(MODELS / "mlp.vmfb"), args.device, args.replicas),
            name=backend,
            route_prefix=f"/{backend}",
        )
    bodies = samples()
    results: Dict[str, List[Dict[str, Any]]] = {backend: [] for backend in backends}
    try:
        for round_number in range(args.rounds):
            order = backends if round_number % 2 == 0 else backends[::-1]
            for backend in order:
                url = f"http://127.0.0.1:{args.port}/{backend}"
                asyncio.run(load(url, bodies, args.concurrency, args.warmup, args.requests))
                figures = asyncio.run(load(url, bodies, args.concurrency, args.seconds, args.requests))
                results[backend].append(figures)
                print(
                    f"round {round_number + 1} {backend:>9}: {figures['requests']} requests in "
                    f"{figures['seconds']:.1f} s, {figures['throughput']:.0f}/s, p50 {figures['p50_ms']:.2f} ms, "
                    f"p99 {figures['p99_ms']:.2f} ms, {figures['wrong']} wrong",
                    flush=True,
                )
    finally:
        serve.shutdown()
        ray.shutdown()

    print(
        f"\n{args.replicas} replicas each, {args.concurrency} concurrent clients, {args.device}, "
        f"median of {args.rounds} rounds:"
    )
    print(f"{'backend':>9} {'requests/s':>11} {'p50 ms':>8} {'p99 ms':>8}")
    summary = {}
    for backend in backends:
        rounds = results[backend]
        summary[backend] = {
            key: statistics.median(r[key] for r in rounds) for key in ("throughput", "p50_ms", "p99_ms")
        }
        s = summary[backend]
        print(f"{backend:>9} {s['throughput']:>11.0f} {s['p50_ms']:>8.2f} {s['p99_ms']:>8.2f}")
    if args.json:
        args.json.write_text(
            json.dumps({"args": vars(args) | {"json": str(args.json)}, "rounds": results, "summary": summary}, indent=2)
        )
    wrong = sum(r["wrong"] for rounds in results.values() for r in rounds)
    if wrong:
        print(f"load_test: {wrong} answers were wrong or failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
