"""rtx's results equal iree.runtime's on the same .vmfb files (compiled by iree-compile 3.13)."""

from __future__ import annotations


import ml_dtypes
import numpy as np
import pytest

import rtx
from conftest import DIGITS, FIXTURES, Reference, assert_same, digit, load, skip

RNG = np.random.default_rng(19)


@pytest.mark.parametrize("device", ["local-task", "local-sync"])
def test_digits_model_matches_iree_and_its_recorded_predictions(device: str) -> None:
    ours, theirs = load(DIGITS / "mlp.vmfb", device), Reference(DIGITS / "mlp.vmfb", device)
    recorded = (DIGITS / "predictions.txt").read_text().splitlines()
    for n in range(10):
        [y] = ours.invoke("predict", digit(n))
        assert_same([y], theirs.invoke("predict", digit(n)))
        assert y.shape == (1, 10) and int(np.argmax(y)) == n
        # iree-run-module's printout of the same input, to its 6 significant digits.
        printed = [float(v) for v in recorded[n].split("=[")[1].rstrip("]").split()]
        np.testing.assert_allclose(y[0], printed, rtol=1e-5)


IDENTITY_INPUTS = {
    "id_f32_r0": np.array(-3.5, np.float32),
    "id_f32_r1": np.array([1, -2, np.inf, np.nan], np.float32),
    "id_f32_r2": np.arange(6, dtype=np.float32).reshape(2, 3),
    "id_f32_r3": RNG.standard_normal((2, 2, 2)).astype(np.float32),
    "id_f32_r4": RNG.standard_normal((1, 2, 2, 2)).astype(np.float32),
    "id_i8": np.array([-128, 127, 0, -1], np.int8),
    "id_si8": np.array([-128, 127, 0, 10], np.int8),
    "id_ui8": np.array([255, 0, 16, 1], np.uint8),
    "id_i16": np.array([-32768, 32767, 1, -2], np.int16),
    "id_si16": np.array([-32768, 32767, 0, 7], np.int16),
    "id_ui16": np.array([65535, 0, 1, 3], np.uint16),
    "id_i32": np.array([2**31 - 1, -(2**31), 1, -16], np.int32),
    "id_ui32": np.array([2**32 - 1, 0, 1, 2**31], np.uint32),
    "id_i64": np.array([2**63 - 1, -(2**63), 0, -1], np.int64),
    "id_ui64": np.array([2**64 - 1, 0, 1, 2**63], np.uint64),
    "id_f16": np.array([1.5, 65504, -0.1, np.nan], np.float16),
    "id_bf16": np.array([1.00390625, 3.14159, -0.0, 1e-40], ml_dtypes.bfloat16),
    "id_f64": np.array([0.1, 1e300, -1e-300, 2.5], np.float64),
    "id_i1": np.array([True, False, False, True]),
    "id_f8e5m2": np.array([1.5, -2, 0.25, 57344], ml_dtypes.float8_e5m2),
    "id_f8e4m3fn": np.array([1.5, -2, 0.25, 448], ml_dtypes.float8_e4m3fn),
    "id_f8e5m2fnuz": np.array([1.5, -2, 0.25, 57344], ml_dtypes.float8_e5m2fnuz),
    "id_f8e4m3fnuz": np.array([1.5, -2, 0.25, 240], ml_dtypes.float8_e4m3fnuz),
    "id_c64": np.array([1 + 2j, -3j, 0, np.inf], np.complex64),
    "id_c128": np.array([1 + 2j, -3j, 0, 1e300], np.complex128),
    "id_i32_2x2": np.array([[1, 2], [3, 4]], np.int32),
    "id_i32_r0": np.array(-7, np.int32),
}


@pytest.fixture(scope="module")
def identity() -> rtx.Context:
    return load(FIXTURES / "hal_io" / "identity.vmfb")


@pytest.fixture(scope="module")
def identity_reference() -> Reference:
    return Reference(FIXTURES / "hal_io" / "identity.vmfb")


@pytest.mark.parametrize("function", sorted(IDENTITY_INPUTS))
def test_every_element_type_round_trips_as_in_iree(
    identity: rtx.Context, identity_reference: Reference, function: str
) -> None:
    x = IDENTITY_INPUTS[function]
    ours = identity.invoke(function, x)
    assert_same(ours, identity_reference.invoke(function, x))
    assert ours[0].dtype == x.dtype
    np.testing.assert_array_equal(ours[0].reshape(-1).view(np.uint8), x.reshape(-1).view(np.uint8))


def test_two_results_of_two_types(identity: rtx.Context, identity_reference: Reference) -> None:
    a, b = np.array([[1, -2], [3, 4]], np.int32), np.array(2.5, np.float32)
    assert_same(identity.invoke("pair", a, b), identity_reference.invoke("pair", a, b))


def test_read_only_inputs_and_results_fed_back_are_read_as_their_values(
    identity: rtx.Context, identity_reference: Reference
) -> None:
    for function in ("id_f32_r0", "id_i32", "id_f32_r2", "id_bf16"):
        x = IDENTITY_INPUTS[function].copy()
        x.flags.writeable = False
        [y] = identity.invoke(function, x)
        assert_same([y], identity_reference.invoke(function, x))
        assert not y.flags.writeable
        [z] = identity.invoke(function, y)  # a result, read-only, as the next call's input
        assert z.shape == x.shape
        assert z.tobytes() == x.tobytes() and z.dtype == x.dtype


def test_strided_and_big_endian_inputs_are_read_as_their_values(
    identity: rtx.Context, identity_reference: Reference
) -> None:
    wide = RNG.standard_normal((4, 6)).astype(np.float32)
    strided = wide[::2, ::2]  # 2x3, not contiguous
    [y] = identity.invoke("id_f32_r2", strided)
    np.testing.assert_array_equal(y, strided)
    assert_same([y], identity_reference.invoke("id_f32_r2", np.ascontiguousarray(strided)))
    swapped = np.array([1, -2, 3, 2**20], ">i4")
    [z] = identity.invoke("id_i32", swapped)
    assert z.dtype == np.int32 and z.tolist() == [1, -2, 3, 2**20]
    fortran = np.asfortranarray(wide[:2, :3])
    np.testing.assert_array_equal(identity.invoke("id_f32_r2", fortran)[0], fortran)


@pytest.mark.parametrize("target", ["embedded", "system", "vmvx"])
def test_tensor_programs_match_iree(target: str) -> None:
    path = FIXTURES / "hal_run" / f"programs_{target}.vmfb"
    ours, theirs = load(path), Reference(path)
    cases = {
        "abs": (RNG.standard_normal(4).astype(np.float32),),
        "add": (RNG.integers(-1000, 1000, (2, 3), np.int32), RNG.integers(-1000, 1000, (2, 3), np.int32)),
        "matmul": (RNG.standard_normal((4, 8)).astype(np.float32), RNG.standard_normal((8, 4)).astype(np.float32)),
        "dense_relu": (RNG.standard_normal((1, 4)).astype(np.float32),),
        "scale_dynamic": (RNG.standard_normal(7).astype(np.float32), 2.5),
        "sum": (RNG.integers(-100, 100, (3, 5), np.int32),),
    }
    for function, args in cases.items():
        assert_same(ours.invoke(function, *args), theirs.invoke(function, *args))


def test_coarse_fences_functions_match_iree() -> None:
    path = FIXTURES / "hal_run" / "async_embedded.vmfb"
    ours, theirs = load(path), Reference(path)
    x, w = RNG.standard_normal((2, 3)).astype(np.float32), RNG.standard_normal((3, 4)).astype(np.float32)
    assert_same(ours.invoke("scores", x, w), theirs.invoke_with_fences("scores", x, w))
    v = np.arange(9, dtype=np.int32)
    assert_same(ours.invoke("scale", v, -3), theirs.invoke_with_fences("scale", v, -3))


def test_scalar_functions_return_python_numbers_as_iree() -> None:
    path = FIXTURES / "vm" / "integer_math.vmfb"
    ours, theirs = load(path, device=None), Reference(path, "local-sync")
    for function, pairs in {
        "add_i32": [(7, 3), (2**31 - 1, 1)],
        "divs_i32": [(-7, 2), (123456, -789)],
        "mul_i64": [(2**40 + 3, -(2**20)), (-5, 7)],
        "cmp_i32": [(-1, 1), (5, 5)],
        "minmax_i64": [(-(2**63), 2**63 - 1)],
    }.items():
        for a, b in pairs:
            got = ours.invoke(function, a, b)
            assert all(type(v) is int for v in got)
            assert_same(got, theirs.invoke(function, a, b))


def test_vulkan_results_equal_iree_run_modules() -> None:
    # iree.runtime cannot take numpy inputs on this device (it imports their memory, which
    # Vulkan wants page-aligned), so the reference is iree-run-module's recorded output.
    try:
        context = load(FIXTURES / "vulkan" / "matmul.vmfb", device="vulkan")
    except (rtx.UnavailableError, rtx.NotFoundError, rtx.FailedPreconditionError) as error:
        skip("vulkan-device", f"no Vulkan device: {error}")
    a = np.array([1, 2, 3, 4, 5, 6, 7, 8, 0, 1, 0, 1, 0, 1, 0, 1, -1, -1, -1, -1, 1, 1, 1, 1, 2, 0, 0, 0, 0, 0, 0, 2])
    b = np.array(
        [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 0, 1, 0.5, 0.5, 0.5, 0.5]
    )
    [y] = context.invoke("matmul", a.reshape(4, 8).astype(np.float32), b.reshape(8, 4).astype(np.float32))
    expected = [[22, 23, 24, 32], [2.5, 3.5, 2.5, 3.5], [2.5, 2.5, 2.5, 3.5], [3, 1, 1, 1]]
    assert (
        "4x4xf32=[22 23 24 32][2.5 3.5 2.5 3.5][2.5 2.5 2.5 3.5][3 1 1 1]"
        in (FIXTURES / "vulkan" / "expected" / "matmul.matmul.1.txt").read_text()
    )
    np.testing.assert_array_equal(y, np.array(expected, np.float32))
