"""Serves ResNet-50 on a two-node Ray cluster through rtx and through onnxruntime, in the same
deployment shape, and kills a replica in the middle of each load: every request must still be
answered, and answered right.

    python cluster_test.py --model resnet50.onnx --input resnet50.input.npy
                           [--backends rtx,onnxruntime] [--concurrency 4] [--seconds 30] [--kill-at 10]

The cluster is two raylets on this machine (``ray.cluster_utils.Cluster``: a head node and a second
node, one logical CPU each). Each backend in turn is deployed as two replicas of one CPU, so Ray
places one on each node, and loaded over HTTP through Serve's proxy on 127.0.0.1 by ``--concurrency``
closed-loop clients for ``--seconds``, after a warm-up. ``--kill-at`` seconds in, one replica's worker
process is killed (SIGKILL) and Serve starts another. A request whose answer is not 200 (the one the
killed replica was running) is sent again, at most ``--retries`` times; every answer is the model's
1000 logits as float32 bytes, checked against onnxruntime's for the same input in this process
(within 1e-4 of the largest). A request that no retry answered is lost. Printed per backend:
requests, throughput, p50/p99 (of the answered requests, retries included in their latency),
requests retried, lost and wrong; with ``--json`` also written as JSON. Fails when any request was
lost or wrong, or when the replicas did not land on two nodes or the killed one was not replaced.

Both backends run one thread per replica: rtx's context on ``mstd:1`` and onnxruntime's session with
``intra_op_num_threads=1``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import aiohttp
import numpy as np
import ray
from ray import serve
from ray.cluster_utils import Cluster
from ray.util.state import list_actors
from starlette.requests import Request
from starlette.responses import Response


@serve.deployment
class ResNet:
    def __init__(self, backend: str, model: str, shape: List[int]) -> None:
        self.backend, self.shape = backend, shape
        if backend == "rtx":
            import rtx

            self.context = rtx.Context(device=None, work_queue="mstd:1")
            module = rtx.Module.load(model)
            self.context.add_module(module)
            self.run = self.context.function(next(iter(module.functions)))
        elif backend == "onnxruntime":
            import onnxruntime as ort

            ort.set_default_logger_severity(3)  # not a warning per initializer listed as an input
            options = ort.SessionOptions()
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
            name = session.get_inputs()[0].name
            self.run = lambda x: session.run(None, {name: x})
        else:
            raise ValueError(f"unknown backend {backend!r} (rtx or onnxruntime)")

    async def __call__(self, request: Request) -> Response:
        x = np.frombuffer(await request.body(), np.float32).reshape(self.shape)
        logits = np.ascontiguousarray(self.run(x)[0], np.float32)
        return Response(logits.tobytes(), media_type="application/octet-stream")


def replicas(backend: str) -> List[Any]:
    """The live replica actors of ``backend``'s deployment."""
    return [
        actor
        for actor in list_actors(filters=[("state", "=", "ALIVE")], detail=True)
        if actor.class_name.startswith("ServeReplica") and f"resnet-{backend}" in actor.class_name
    ]


async def load(
    url: str, body: bytes, expected: np.ndarray, concurrency: int, seconds: float, retries: int, kill: Any = None
) -> Dict[str, Any]:
    """Closed-loop load on ``url``; ``kill`` runs once, ``kill.at`` seconds in."""
    latencies: List[float] = []
    counts = {"retried": 0, "lost": 0, "wrong": 0, "refusals": 0}
    scale = float(np.abs(expected).max())
    started = time.perf_counter()
    deadline = started + seconds

    async def one(session: aiohttp.ClientSession) -> None:
        begun = time.perf_counter()
        for attempt in range(retries + 1):
            try:
                async with session.post(url, data=body) as response:
                    answer = await response.read() if response.status == 200 else None
            except aiohttp.ClientError:
                answer = None
            if answer is not None:
                latencies.append(time.perf_counter() - begun)
                got = np.frombuffer(answer, np.float32)
                if got.shape != expected.shape or np.abs(got - expected).max() > 1e-4 * scale:
                    counts["wrong"] += 1
                return
            counts["refusals"] += 1
            if attempt == 0:
                counts["retried"] += 1
            await asyncio.sleep(0.3)
        counts["lost"] += 1

    async def client(session: aiohttp.ClientSession) -> None:
        while time.perf_counter() < deadline:
            await one(session)

    async def killer() -> None:
        await asyncio.sleep(kill.at)
        kill()

    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency), timeout=timeout) as session:
        tasks = [client(session) for _ in range(concurrency)]
        if kill is not None:
            tasks.append(killer())
        await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - started
    ordered = sorted(latencies)
    return {
        "requests": len(ordered) + counts["lost"],
        "answered": len(ordered),
        "seconds": elapsed,
        "throughput": len(ordered) / elapsed,
        "p50_ms": 1000 * ordered[len(ordered) // 2] if ordered else None,
        "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else None,
        **counts,
    }


class Kill:
    """Kills one of ``backend``'s replicas (its worker process, SIGKILL) when called."""

    def __init__(self, backend: str, at: float) -> None:
        self.backend, self.at = backend, at
        self.killed: Any = None

    def __call__(self) -> None:
        victim = replicas(self.backend)[0]
        os.kill(victim.pid, signal.SIGKILL)
        self.killed = {"actor": victim.actor_id, "node": victim.node_id, "pid": victim.pid}
        print(f"  killed replica {victim.actor_id[:8]} (pid {victim.pid}) on node {victim.node_id[:8]}", flush=True)


def wait_for_replicas(backend: str, count: int, timeout: float = 120.0) -> List[Any]:
    deadline = time.time() + timeout
    while time.time() < deadline:
        live = replicas(backend)
        if len(live) == count:
            return live
        time.sleep(0.5)
    raise RuntimeError(f"{backend}: {count} replicas did not come up within {timeout:.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, required=True, help="ResNet-50 as .onnx")
    parser.add_argument("--input", type=Path, required=True, help="an input of the model's shape (.npy, float32)")
    parser.add_argument("--backends", default="rtx,onnxruntime")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=30.0, help="per load (default 30)")
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--kill-at", type=float, default=10.0, help="seconds into each load")
    parser.add_argument("--retries", type=int, default=10)
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import onnxruntime as ort

    x = np.load(args.input).astype(np.float32)
    ort.set_default_logger_severity(3)
    reference = ort.InferenceSession(str(args.model), providers=["CPUExecutionProvider"])
    expected = np.asarray(reference.run(None, {reference.get_inputs()[0].name: x})[0], np.float32).reshape(-1)
    del reference

    # The dashboard serves the state API that finds the replicas (their nodes and processes).
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": True})
    cluster.add_node(num_cpus=1)
    ray.init(address=cluster.address, log_to_driver=False)
    results: Dict[str, Any] = {}
    failed: List[str] = []
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": args.port})
        for backend in args.backends.split(","):
            application = ResNet.options(
                name=f"resnet-{backend}", num_replicas=2, ray_actor_options={"num_cpus": 1}
            ).bind(backend, str(args.model.resolve()), list(x.shape))
            serve.run(application, name=backend, route_prefix=f"/{backend}")
            placed = wait_for_replicas(backend, 2)
            nodes = {actor.node_id for actor in placed}
            url = f"http://127.0.0.1:{args.port}/{backend}"
            asyncio.run(load(url, x.tobytes(), expected, args.concurrency, args.warmup, args.retries))
            kill = Kill(backend, args.kill_at)
            figures = asyncio.run(load(url, x.tobytes(), expected, args.concurrency, args.seconds, args.retries, kill))
            after = wait_for_replicas(backend, 2)
            figures |= {
                "nodes": len(nodes),
                "killed": kill.killed,
                "replaced": kill.killed is not None and all(a.actor_id != kill.killed["actor"] for a in after),
            }
            results[backend] = figures
            print(
                f"{backend:>12}: {figures['requests']} requests in {figures['seconds']:.1f} s, "
                f"{figures['throughput']:.2f}/s, p50 {figures['p50_ms']:.1f} ms, p99 {figures['p99_ms']:.1f} ms; "
                f"replicas on {figures['nodes']} nodes, one killed {args.kill_at:.0f} s in and "
                f"{'replaced' if figures['replaced'] else 'NOT replaced'}; {figures['retried']} retried "
                f"({figures['refusals']} refusals), {figures['lost']} lost, {figures['wrong']} wrong",
                flush=True,
            )
            if figures["lost"] or figures["wrong"] or figures["nodes"] != 2 or not figures["replaced"]:
                failed.append(backend)
            serve.delete(backend)
    finally:
        serve.shutdown()
        ray.shutdown()
        cluster.shutdown()
    if args.json:
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "results": results}, indent=2))
    if failed:
        print(f"cluster_test: {', '.join(failed)}: a request was lost or wrong, or the cluster misbehaved", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
