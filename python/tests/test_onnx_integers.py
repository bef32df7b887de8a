"""Integer arithmetic of the elementwise operators is exact and wraps as numpy's does: f64 holds
only 53 bits, so integers do not go through it."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import rtx
import rtx.backend


def _run(op: str, *inputs: np.ndarray, **attributes: object) -> np.ndarray:
    names = [f"x{k}" for k in range(len(inputs))]
    node = helper.make_node(op, names, ["y"], **attributes)
    [y] = rtx.backend.run_node(node, list(inputs))
    return y


def test_int64_arithmetic_is_exact_above_two_to_the_53() -> None:
    big = np.array([2**53 + 1, -(2**62) - 3, 9_007_199_254_740_993], np.int64)
    one = np.array([1, 1, 2], np.int64)
    np.testing.assert_array_equal(_run("Add", big, one), big + one)
    np.testing.assert_array_equal(_run("Sub", big, one), big - one)
    np.testing.assert_array_equal(_run("Mul", big, one), big * one)
    # Truncated towards zero, computed by hand from the exact values.
    quotients = [3002399751580331, -658812288346769701, -1801439850948198]
    np.testing.assert_array_equal(_run("Div", big, np.array([3, 7, -5], np.int64)), quotients)
    np.testing.assert_array_equal(_run("Max", big, one, np.array([0, 0, 2**60], np.int64)), [2**53 + 1, 1, 2**60])
    np.testing.assert_array_equal(_run("Sum", big, big), big + big)
    np.testing.assert_array_equal(_run("Neg", big), -big)


def test_integer_overflow_wraps_and_mod_takes_the_divisors_sign() -> None:
    x = np.array([65536, 2**31 - 1, -(2**31)], np.int32)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(_run("Mul", x, x), x * x)
        np.testing.assert_array_equal(_run("Add", x, x), x + x)
    np.testing.assert_array_equal(_run("Abs", x), np.abs(x))
    a, b = np.array([-7, 7, -7, 7], np.int64), np.array([3, -3, -3, 3], np.int64)
    np.testing.assert_array_equal(_run("Mod", a, b), np.mod(a, b))
    np.testing.assert_array_equal(_run("Mod", a, b, fmod=1), np.fmod(a, b))
    u = np.array([2**64 - 1, 2**63], np.uint64)
    np.testing.assert_array_equal(_run("Add", u, np.array([1, 2**63], np.uint64)), [0, 0])


def test_integer_division_by_zero_is_an_error_naming_the_kernel() -> None:
    with pytest.raises(rtx.errors.Error, match="onnx.Div: integer division by zero"):
        _run("Div", np.array([1], np.int64), np.array([0], np.int64))
    with pytest.raises(rtx.errors.Error, match="onnx.Mod: integer modulo by zero"):
        _run("Mod", np.array([1], np.int32), np.array([0], np.int32))
