"""Builds the wheel of `rtx`: compiles librtx with cargo and bundles it as package data.

``pip install ./python``, ``pip wheel ./python`` and ``python -m build --wheel python`` (from a
clone of the repository) run the release build of scripts/setup/install.sh, ``cargo rustc --release --lib
--crate-type cdylib,staticlib -- --print native-static-libs``, in the repository root (this file's parent
directory) and put the library it builds, ``librtx.so`` (SONAME
``librtx.so.<ABI>``), next to ``rtx/__init__.py`` in the wheel, where ``rtx/_library.py`` loads
it. Cargo puts it under ``CARGO_TARGET_DIR`` (a relative one is taken from the repository
root), by default ``<repo>/target``; setuptools' build files go to ``<that>/python/build``.

``RTX_PREBUILT_LIBRARY=/path/to/librtx.so`` bundles that library instead, without cargo (for
packagers and scripts/setup/python-package.sh, which ships the installed library). A separate name
from ``RTX_LIBRARY``, which picks the library at import time: setting that one while developing
does not change what a wheel carries.

The wheel also carries ``rtx._native`` (``rtx/_native.c``), the compiled binding that runs an
eager op in one call instead of several through ctypes. It is built against the Python that
builds the wheel (its headers: Debian's ``python3-dev``) and the repository's ``include/rtx.h``,
so the wheel is tagged for that Python and platform (``cp311-cp311-linux_x86_64``). Where it
cannot be compiled, the build says why and goes on without it: the package then takes the ctypes
path for every op.

There is no source distribution: the package is built from the repository, whose Rust sources
are outside python/. ``python -m build python`` (an sdist, then a wheel from it) stops with a
message saying to add ``--wheel``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

from setuptools import Distribution, Extension, setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist
from setuptools.errors import ExecError, PlatformError, SetupError

PACKAGE_DIR = Path(__file__).resolve().parent
REPO = PACKAGE_DIR.parent
MANIFEST = REPO / "Cargo.toml"
PREBUILT = "RTX_PREBUILT_LIBRARY"
LIBRARY = "librtx.so"  # the name rtx/_library.py loads


def in_repository() -> bool:
    """Whether this python/ sits in the rtx repository (not in an unpacked sdist or a copy)."""
    return MANIFEST.is_file() and re.search(r'^links = "rtx"$', MANIFEST.read_text(), re.M) is not None


def target_dir() -> Path:
    """Cargo's target directory: CARGO_TARGET_DIR (relative to the repository) or <repo>/target."""
    return REPO / (os.environ.get("CARGO_TARGET_DIR") or "target")


def toml_value(text: str, table: str, key: str) -> Optional[str]:
    """The raw value of `key` in `[table]` of a Cargo.toml (no TOML parser before Python 3.11)."""
    current = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            current = line
        elif current == f"[{table}]":
            match = re.match(rf"{re.escape(key)}\s*=\s*(.*)$", line)
            if match:
                return match.group(1).strip().strip('"')
    return None


def check_versions() -> None:
    """The package's version must be Cargo.toml's, and its ABI the library's (build.rs)."""
    cargo = MANIFEST.read_text()
    cargo_version = toml_value(cargo, "workspace.package", "version") or toml_value(cargo, "package", "version")
    package_version = toml_value((PACKAGE_DIR / "pyproject.toml").read_text(), "project", "version")
    if cargo_version != package_version:
        raise SetupError(f"rtx: python/pyproject.toml has version {package_version} but Cargo.toml {cargo_version}")
    abi = toml_value(cargo, "package.metadata.rtx", "abi-version")
    match = re.search(r"^ABI_VERSION = (\d+)$", (PACKAGE_DIR / "rtx" / "_library.py").read_text(), re.M)
    if match is None or match.group(1) != abi:
        raise SetupError(f"rtx: rtx/_library.py's ABI_VERSION is not Cargo.toml's abi-version {abi}")


def cargo_build() -> Path:
    """Builds librtx.so in the repository with scripts/setup/install.sh's command, the same rustc
    arguments included, so that after one of the two the other finds the build up to date (any other
    arguments would link the whole library again, minutes with the release profile's link-time
    optimization); the file it built."""
    cargo = os.environ.get("CARGO") or shutil.which("cargo")
    if cargo is None and (Path.home() / ".cargo" / "bin" / "cargo").is_file():
        cargo = str(Path.home() / ".cargo" / "bin" / "cargo")  # rustup's, when PATH lacks it
    if cargo is None:
        raise PlatformError(
            "rtx: building the package compiles librtx, which needs Rust's cargo (Rust 1.85 or newer), "
            "and cargo is not on PATH. Install Rust with rustup (https://rustup.rs: "
            "curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh), then run pip again; or set "
            f"{PREBUILT} to a librtx.so built before (scripts/setup/install.sh)."
        )
    env = dict(os.environ, CARGO_TARGET_DIR=str(target_dir()))
    command = [cargo, "rustc", "--release", "--lib", "--crate-type", "cdylib,staticlib", "--manifest-path", str(MANIFEST)]
    rustc_arguments = ["--", "--print", "native-static-libs"]
    print("rtx: " + " ".join(command + rustc_arguments), file=sys.stderr, flush=True)
    # Diagnostics go to stderr as cargo prints them; stdout carries the artifacts as JSON.
    try:
        done = subprocess.run(
            [*command, "--message-format=json-render-diagnostics", *rustc_arguments],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
    except OSError as error:
        raise PlatformError(f"rtx: cannot run {cargo}: {error}") from error
    if done.returncode != 0:
        raise ExecError(
            f"rtx: '{' '.join(command)}' failed (exit status {done.returncode}); cargo's errors are above. "
            "librtx needs Rust 1.85 or newer (rustup update) and a C linker (cc, e.g. apt-get install gcc)."
        )
    built: List[Path] = []
    for line in done.stdout.splitlines():
        message = json.loads(line) if line.startswith("{") else {}
        if message.get("reason") == "compiler-artifact" and message["target"]["name"] == "rtx":
            built += [Path(f) for f in message["filenames"] if Path(f).name == LIBRARY]
    if len(built) != 1:
        raise ExecError(f"rtx: cargo built no single {LIBRARY} (found {built or 'none'})")
    return built[0]


def library() -> Path:
    """The librtx.so the wheel carries: RTX_PREBUILT_LIBRARY's, or a fresh release build."""
    prebuilt = os.environ.get(PREBUILT)
    if prebuilt:
        path = Path(prebuilt).resolve()  # the real file behind an installed librtx.so link
        if not path.is_file():
            raise SetupError(f"rtx: {PREBUILT}={prebuilt} is not a file")
        return path
    if not in_repository():
        raise SetupError(
            f"rtx: {MANIFEST} is missing: the package is built from a clone of the rtx repository, as "
            "`pip install ./python`, `pip wheel ./python` or `python -m build --wheel python` (the Rust "
            f"sources of librtx are outside python/, so an sdist cannot build it); or set {PREBUILT} to a "
            "built librtx.so"
        )
    return cargo_build()


class BuildPy(build_py):
    """Copies the package, then librtx.so into it (into the source tree for an editable install)."""

    def run(self) -> None:
        if in_repository():
            check_versions()
        source = library()
        if not self.editable_mode:
            shutil.rmtree(Path(self.build_lib) / "rtx", ignore_errors=True)  # no stale files in the wheel
        super().run()
        package = PACKAGE_DIR / "rtx" if self.editable_mode else Path(self.build_lib) / "rtx"
        package.mkdir(parents=True, exist_ok=True)
        destination = package / LIBRARY
        if destination.exists() or destination.is_symlink():
            destination.unlink()  # a fresh inode: a process that has the old one loaded keeps it intact
        shutil.copyfile(source, destination)
        destination.chmod(0o755)
        print(f"rtx: bundled {source} as {destination}", file=sys.stderr)

    def get_outputs(self, include_bytecode: bool = True) -> List[str]:
        outputs = super().get_outputs(include_bytecode)
        library_output = str(Path(self.build_lib) / "rtx" / LIBRARY)
        return outputs if library_output in outputs else [*outputs, library_output]


class BinaryDistribution(Distribution):
    """Not pure: bdist_wheel tags the wheel with the platform and installs it to platlib."""

    def has_ext_modules(self) -> bool:
        return True


class NoSdist(sdist):
    def run(self) -> None:
        raise SetupError(
            "rtx has no source distribution: the wheel compiles librtx from the Rust sources of the "
            "repository, outside python/. Build the wheel from a clone: `python -m build --wheel python`, "
            "`pip wheel ./python` or `pip install ./python`."
        )


options = {}
if in_repository():
    # setuptools' build files under cargo's target directory rather than in python/.
    options["build"] = {"build_base": str(target_dir() / "python" / "build")}

setup(
    distclass=BinaryDistribution,
    cmdclass={"build_py": BuildPy, "sdist": NoSdist},
    options=options,
    ext_modules=[
        Extension(
            "rtx._native",
            sources=["rtx/_native.c"],
            include_dirs=[str(REPO / "include")],
            extra_compile_args=["-std=c11", "-Wall", "-Wextra"],
            optional=True,
        )
    ],
)
