// Kernel and function locations come back as the locations they were written from: file
// positions, names, call sites and fusions.
// RUN: rtx translate --bef-to-mlir --mlir-print-debuginfo %s.bef | FileCheck %s

// CHECK-LABEL: func.func @located
func.func @located() -> i32 {
  // CHECK-NEXT: tfrt.constant.i32 1 loc("{{.*}}locations.mlir":[[# @LINE + 1]]:8)
  %a = tfrt.constant.i32 1
  // CHECK-NEXT: tfrt.constant.i32 2 loc("two")
  %b = tfrt.constant.i32 2 loc("two")
  // CHECK-NEXT: tfrt.constant.i32 3 loc("three"("f.py":3:4))
  %c = tfrt.constant.i32 3 loc("three"("f.py":3:4))
  // CHECK-NEXT: tfrt.add.i32 {{.*}} loc(callsite("callee" at "g.py":7:1))
  %d = tfrt.add.i32 %a, %b loc(callsite("callee" at "g.py":7:1))
  // CHECK-NEXT: tfrt.add.i32 {{.*}} loc(fused["a.py":1:2, "b"])
  %e = tfrt.add.i32 %c, %d loc(fused["a.py":1:2, "b"])
  // The return is where its function is (BEF does not keep its own location).
  // CHECK-NEXT: tfrt.return {{.*}} loc("{{.*}}locations.mlir":[[FUNC:[0-9]+]]:1)
  // CHECK-NEXT: } loc("{{.*}}locations.mlir":[[FUNC]]:1)
  tfrt.return %e : i32
}
