#!/usr/bin/env python3
"""Runs IREE's own end-to-end check suites (`tests/e2e` of an iree-org/iree checkout) with rtx.

For every `iree_check_single_backend_test_suite` of the checkout that targets the given compiler
backend and runtime driver, each source file is compiled by `iree-compile` with the suite's
compiler flags and run with `rtx check`; the script prints one line per file and a total of the
test functions that passed and failed, and writes the same as JSON.

With --compare-iree, each test function is also rewritten to return the values its checks
compare (the checks removed), compiled, and run by both `iree-run-module` and `rtx run` on the
same device: a function counts as matching when both print the same. This is how a failed check
is told apart from a difference with IREE's runtime (IREE's PyPI tools have no check runner).

The suites are IREE's, not ours, and are not checked in: point --iree at a checkout.

  scripts/check/iree-e2e-sweep.py --iree ~/iree --backend vulkan-spirv --driver vulkan --out target/e2e
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

DEVICE_OF_DRIVER = {"vulkan": "vulkan", "local-task": "local-task", "local-sync": "local-sync"}


def suites(e2e: Path, backend: str, driver: str):
    """(cmake file, suite name, sources, compiler flags, labels) of each matching suite."""
    for cmake in sorted(e2e.rglob("CMakeLists.txt")):
        text = cmake.read_text()
        for block in re.findall(r"^iree_check_single_backend_test_suite\((.*?)^\)", text, re.S | re.M):
            fields, key = {}, None
            for token in block.split():
                if re.fullmatch(r"[A-Z_]+", token):
                    key = token
                    fields[key] = []
                elif key:
                    fields[key].append(token.strip('"'))
            if fields.get("TARGET_BACKEND") != [backend] or fields.get("DRIVER") != [driver]:
                continue
            flags = fields.get("COMPILER_FLAGS", [])
            if any("${" in f for f in flags + fields.get("SRCS", [])):
                continue
            # CMake escapes parentheses in flags; the shell does not need them escaped.
            flags = [f.replace("\\(", "(").replace("\\)", ")") for f in flags]
            yield cmake.parent, fields["NAME"][0], fields.get("SRCS", []), flags, fields.get("LABELS", [])


def compile_vmfb(args, flags, source: Path, vmfb: Path):
    """Compiles `source` into `vmfb` (kept as it is with --reuse when there); None when it compiled,
    else ("compile timeout" | "compile error", detail lines)."""
    if vmfb.exists() and args.reuse:
        return None
    try:
        compiled = subprocess.run([args.iree_compile, f"--iree-hal-target-backends={args.backend}", *flags,
                                   str(source), "-o", str(vmfb)], capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return "compile timeout", []
    if compiled.returncode != 0:
        errors = [line for line in compiled.stderr.splitlines() if "error:" in line]
        return "compile error", errors[:1] or compiled.stderr.strip().splitlines()[-1:]
    return None


def run_one(job, args):
    folder, suite, source, flags = job
    stem = f"{folder.name}__{suite}__{Path(source).stem}"
    vmfb = Path(args.out) / f"{stem}.vmfb"
    result = {"suite": f"{folder.name}/{suite}", "source": source, "passed": [], "failed": []}
    failure = compile_vmfb(args, flags, folder / source, vmfb)
    if failure:
        result["status"], detail = failure
        if detail:
            result["detail"] = detail
        return result
    try:
        ran = subprocess.run([args.rtx, "check", f"--module={vmfb}", f"--device={DEVICE_OF_DRIVER[args.driver]}"],
                             capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        result["status"] = "run timeout"
        return result
    for line in ran.stdout.splitlines():
        if line.startswith("PASS "):
            result["passed"].append(line[5:])
        elif line.startswith("FAIL "):
            result["failed"].append(line[5:])
    counted = re.search(r"(\d+) passed, (\d+) failed", ran.stdout)
    result["status"] = "ran" if counted else f"rtx exit {ran.returncode}"
    if ran.returncode not in (0, 1) or not counted or ran.stderr.strip():
        result["detail"] = (ran.stdout + ran.stderr).strip().splitlines()[-6:]
    return result


def check_ops(body: str):
    """(start, end, value, type) of each `check.expect_*` op in `body`: the op's text span, the
    first value it checks and that value's type."""
    for match in re.finditer(r"check\.expect_\w+(<[^>]*>)?\(", body):
        depth, i = 1, match.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(body[i], 0)
            i += 1
        value = re.match(r"\s*(%[\w.#]+)", body[match.end():]).group(1)
        type_match = re.match(r"\s*:\s*([^\n]+)", body[i:])
        end = i + type_match.end()
        types = [t.strip() for t in split_types(type_match.group(1).strip())]
        yield match.start(), end, value, types[0]


def split_types(text: str):
    """Top-level comma-separated types (`tensor<2x3xf32>, tensor<i32>`)."""
    depth, start = 0, 0
    for i, c in enumerate(text):
        depth += {"<": 1, ">": -1}.get(c, 0)
        if c == "," and depth == 0:
            yield text[start:i]
            start = i + 1
    yield text[start:]


def returning_variants(source: str):
    """The test functions of `source` (name, module text) rewritten to return what they check; the
    text is None for a function with no check or no `return` to rewrite."""
    functions = list(re.finditer(r"^(\s*)func\.func (?:public )?@([\w.$-]+)\(\)\s*\{", source, re.M))
    for index, function in enumerate(functions):
        end = functions[index + 1].start() if index + 1 < len(functions) else len(source)
        body = source[function.end():end]
        close = body.rfind("}")
        checks = list(check_ops(body[:close]))
        if "return" not in body[:close] or not checks:
            yield function.group(2), None
            continue
        kept, last = [], 0
        for start, stop, _, _ in checks:
            kept.append(body[last:start])
            last = stop
        kept.append(body[last:close])
        rewritten = "".join(kept)
        values = ", ".join(value for _, _, value, _ in checks)
        types = ", ".join(t for _, _, _, t in checks)
        position = rewritten.rfind("return")
        rewritten = rewritten[:position] + f"return {values} : {types}" + rewritten[position + len("return"):]
        indent, name = function.group(1), function.group(2)
        header = f"{indent}func.func @{name}() -> ({types}) {{"
        # The file's other functions stay as they are (helpers, or tests not called).
        # What follows the function's closing brace (aliases of later functions) stays.
        yield name, source[:function.start()] + header + rewritten + body[close:] + source[end:]


def compare_one(job, args):
    """Compiles each test function of a file rewritten to return its checked values and runs it
    with iree-run-module and rtx run; returns the names that match, differ, or do not compile."""
    folder, suite, source, flags = job
    result = {"suite": f"{folder.name}/{suite}", "source": source, "same": [], "different": [], "skipped": [],
              "uncompiled": []}
    # Comments go first: suites keep commented-out tests whose checks would be rewritten too.
    text = re.sub(r"//[^\n]*", "", (folder / source).read_text())
    for name, variant in returning_variants(text):
        if variant is None:
            result["skipped"].append(name)
            continue
        stem = Path(args.out) / f"cmp__{folder.name}__{suite}__{Path(source).stem}__{name}"
        mlir, vmfb = stem.with_suffix(".mlir"), stem.with_suffix(".vmfb")
        mlir.write_text(variant)
        if compile_vmfb(args, flags, mlir, vmfb):
            result["uncompiled"].append(name)
            continue
        outputs = []
        for runner in ([args.iree_run_module], [args.rtx, "run"]):
            try:
                ran = subprocess.run([*runner, f"--device={DEVICE_OF_DRIVER[args.driver]}", f"--module={vmfb}",
                                      f"--function={name}"], capture_output=True, text=True, timeout=args.timeout)
                outputs.append((ran.returncode, ran.stdout))
            except subprocess.TimeoutExpired:
                outputs.append(("timeout", ""))
        if outputs[0] == outputs[1]:
            result["same"].append(name)
        else:
            result["different"].append(name)
            (stem.with_suffix(".iree.txt")).write_text(f"{outputs[0][0]}\n{outputs[0][1]}")
            (stem.with_suffix(".rtx.txt")).write_text(f"{outputs[1][0]}\n{outputs[1][1]}")
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iree", required=True, help="an iree-org/iree checkout")
    parser.add_argument("--backend", default="vulkan-spirv")
    parser.add_argument("--driver", default="vulkan", choices=sorted(DEVICE_OF_DRIVER))
    parser.add_argument("--out", default="target/e2e")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=int, default=300, help="seconds per compile and per run")
    parser.add_argument("--include-manual", action="store_true", help="also suites labelled manual")
    parser.add_argument("--only", default="", help="regex on suite/source to run a subset")
    parser.add_argument("--reuse", action="store_true", help="keep .vmfb files compiled by an earlier run")
    parser.add_argument("--rtx", default=str(Path(__file__).resolve().parent.parent.parent / "target/release/rtx"))
    parser.add_argument("--iree-compile", default=shutil.which("iree-compile") or "iree-compile")
    parser.add_argument("--compare-iree", action="store_true",
                        help="run each test rewritten to return what it checks with iree-run-module and rtx run")
    parser.add_argument("--iree-run-module", default=shutil.which("iree-run-module") or "iree-run-module")
    args = parser.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)

    jobs, skipped = [], []
    for folder, suite, sources, flags, labels in suites(Path(args.iree) / "tests/e2e", args.backend, args.driver):
        if "manual" in labels and not args.include_manual:
            skipped.append(f"{folder.name}/{suite} (manual: {', '.join(l for l in labels if l != 'manual')})")
            continue
        for source in sources:
            if re.search(args.only, f"{folder.name}/{suite}/{source}"):
                jobs.append((folder, suite, source, flags))

    if not jobs:
        print(f"no test file of {args.backend}/{args.driver} matches under {args.iree}/tests/e2e")
        return 2
    if args.compare_iree:
        return compare(jobs, args)
    results = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for result in pool.map(lambda job: run_one(job, args), jobs):
            results.append(result)
            line = f"{result['suite']}/{result['source']}: {result['status']}"
            if result["status"] == "ran":
                line += f" {len(result['passed'])} passed, {len(result['failed'])} failed"
                if result["failed"]:
                    line += f" ({', '.join(result['failed'])})"
            print(line, flush=True)
            for detail in result.get("detail", []):
                print(f"    {detail}", flush=True)

    passed = sum(len(r["passed"]) for r in results)
    failed = sum(len(r["failed"]) for r in results)
    compiled = sum(1 for r in results if not r["status"].startswith("compile"))
    # A file that did not compile, timed out or crashed rtx checked nothing: not a pass.
    unrun = [f"{r['suite']}/{r['source']} ({r['status']})" for r in results if r["status"] != "ran"]
    print(f"\n{len(results)} files, {compiled} compiled; functions: {passed} passed, {failed} failed;"
          f" {len(unrun)} files not run to the end{': ' + ', '.join(unrun) if unrun else ''}")
    for suite in skipped:
        print(f"skipped suite {suite}")
    with open(Path(args.out) / "summary.json", "w") as f:
        json.dump({"results": results, "skipped_suites": skipped, "passed": passed, "failed": failed}, f, indent=1,
                  default=str)
    return 0 if failed == 0 and not unrun else 1


def compare(jobs, args):
    results = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for result in pool.map(lambda job: compare_one(job, args), jobs):
            results.append(result)
            line = f"{result['suite']}/{result['source']}: {len(result['same'])} same"
            if result["different"]:
                line += f", {len(result['different'])} DIFFERENT ({', '.join(result['different'])})"
            if result["uncompiled"]:
                line += f", {len(result['uncompiled'])} not compiled ({', '.join(result['uncompiled'])})"
            if result["skipped"]:
                line += f", {len(result['skipped'])} with nothing to compare ({', '.join(result['skipped'])})"
            print(line, flush=True)
    same = sum(len(r["same"]) for r in results)
    different = sum(len(r["different"]) for r in results)
    uncompiled = sum(len(r["uncompiled"]) for r in results)
    skipped = sum(len(r["skipped"]) for r in results)
    print(f"\nfunctions: {same} print what iree-run-module prints, {different} differ, {uncompiled} not compiled "
          f"by iree-compile, {skipped} with nothing to compare")
    with open(Path(args.out) / "compare.json", "w") as f:
        json.dump({"results": results, "same": same, "different": different}, f, indent=1, default=str)
    return 0 if different == 0 else 1

if __name__ == "__main__":
    sys.exit(main())
