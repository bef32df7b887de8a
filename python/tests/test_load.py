"""Many calls: memory stays flat over 10,000 invocations, and threads and asyncio tasks calling
at once all get their own correct results."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import os

import numpy as np

import rtx
from conftest import Reference, digit

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    """Resident set size in bytes (Linux)."""
    gc.collect()
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE


def test_ten_thousand_invocations_keep_memory_flat(digits: rtx.Context) -> None:
    x = digit(5)
    for _ in range(1000):  # warm up: allocator pools, caches
        digits.invoke("predict", x)
    before = rss()
    for _ in range(10_000):
        [y] = digits.invoke("predict", x)
    for _ in range(2_000):
        digits.invoke_async("predict", x).result(timeout=60)
    grown = rss() - before
    # One leaked buffer view per call would be >= 10,000 x (256 input bytes + its struct) ~ 4 MB.
    assert grown < 2 * 1024 * 1024, f"RSS grew by {grown / 1024:.0f} KiB over 12,000 calls"
    assert int(np.argmax(y)) == 5


def expected_predictions(reference: Reference) -> list:
    return [reference.invoke("predict", digit(n))[0] for n in range(10)]


def test_threads_calling_at_once_get_their_own_results(digits: rtx.Context, digits_reference: Reference) -> None:
    expected = expected_predictions(digits_reference)

    def worker(seed: int) -> int:
        for i in range(200):
            n = (seed + i) % 10
            [y] = digits.invoke("predict", digit(n))
            np.testing.assert_array_equal(y, expected[n])
        return seed

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        assert sorted(pool.map(worker, range(16))) == list(range(16))


def test_invoke_async_from_many_threads(digits: rtx.Context, digits_reference: Reference) -> None:
    expected = expected_predictions(digits_reference)

    def worker(seed: int) -> None:
        futures = [(n % 10, digits.invoke_async("predict", digit(n % 10))) for n in range(seed, seed + 100)]
        for n, future in futures:
            np.testing.assert_array_equal(future.result(timeout=60)[0], expected[n])

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(worker, range(8)))


def test_asyncio_tasks_at_once(digits: rtx.Context, digits_reference: Reference) -> None:
    expected = expected_predictions(digits_reference)

    async def one(n: int) -> None:
        [y] = await digits.invoke_awaitable("predict", digit(n))
        np.testing.assert_array_equal(y, expected[n])

    async def many() -> None:
        await asyncio.gather(*(one(i % 10) for i in range(1000)))

    asyncio.run(many())

    def loop_in_thread(seed: int) -> None:
        async def few() -> None:
            await asyncio.gather(*(one((seed + i) % 10) for i in range(100)))

        asyncio.run(few())

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(loop_in_thread, range(4)))
