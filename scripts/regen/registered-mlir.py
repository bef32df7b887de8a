#!/usr/bin/env python3
"""Writes a large MLIR module of registered ops in generic text, for timing `rtx translate
--mlir-to-mlirbc` against `iree-opt --emit-bytecode` (see benches/mlir.rs and README).

Each `func.func` holds arith ops with properties (constants, addi/muli, cmpi with its predicate,
select, addf/mulf), a `func.call` of the previous function and a `func.return`; every op has a
file-line-col location. `gen-registered-mlir.py OPS > big.mlir` writes about OPS operations."""

import sys

OPS_PER_FUNC = 1000


def function(out, f):
    file = f"model_{f % 7}.py"
    line = 1
    out.append(
        f'  "func.func"() <{{function_type = (i32, i32, f32) -> i32, sym_name = "f{f}"}}> ({{\n'
        f"  ^bb0(%arg0: i32, %arg1: i32, %arg2: f32):\n"
    )
    body = []
    n = 0
    prev, fprev = "%arg0", "%arg2"

    def op(text):
        nonlocal n, line
        col = 5 + (n % 3) * 4
        body.append(f'    {text} loc("{file}":{line}:{col})\n')
        n += 1
        if n % 2 == 0:
            line += 1

    k = 0
    while n < OPS_PER_FUNC - 3:
        c = f"%c{k}"
        op(f'{c} = "arith.constant"() <{{value = {k % 97} : i32}} > : () -> i32'.replace("} >", "}>"))
        a = f"%a{k}"
        op(f'{a} = "arith.addi"({prev}, {c}) <{{overflowFlags = #arith.overflow<none>}}> : (i32, i32) -> i32')
        m = f"%m{k}"
        op(f'{m} = "arith.muli"({a}, %arg1) <{{overflowFlags = #arith.overflow<none>}}> : (i32, i32) -> i32')
        p = f"%p{k}"
        op(f'{p} = "arith.cmpi"({m}, {a}) <{{predicate = {k % 10} : i64}}> : (i32, i32) -> i1')
        s = f"%s{k}"
        op(f'{s} = "arith.select"({p}, {m}, {a}) : (i1, i32, i32) -> i32')
        x = f"%x{k}"
        op(f'{x} = "arith.addf"({fprev}, %arg2) <{{fastmath = #arith.fastmath<none>}}> : (f32, f32) -> f32')
        prev, fprev = s, x
        k += 1
    callee = f"f{f - 1}" if f > 0 else f"f{f}"
    op(f'%r = "func.call"({prev}, %arg1, {fprev}) <{{callee = @{callee}}}> : (i32, i32, f32) -> i32')
    op(f'%t = "arith.addi"(%r, {prev}) <{{overflowFlags = #arith.overflow<none>}}> : (i32, i32) -> i32')
    op('"func.return"(%t) : (i32) -> ()')
    out.extend(body)
    out.append(f'  }}) : () -> () loc("{file}":0:0)\n')
    return n + 1


def main():
    total = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    out = ['"builtin.module"() ({\n']
    ops, f = 1, 0
    while ops < total:
        ops += function(out, f)
        f += 1
    out.append('}) : () -> () loc("model_0.py":0:0)\n')
    sys.stdout.write("".join(out))


main()
