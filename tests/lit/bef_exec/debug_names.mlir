// A kernel's debug name comes from its location: a name, the names of a fusion's children joined
// (none gives the empty name), a call site's callee; other locations have none.
// RUN: rtx bef-exec %s | FileCheck %s --match-full-lines

// CHECK: --- Running 'names':
func.func @names() -> !tfrt.chain {
  %c0 = tfrt.new.chain
  // CHECK-NEXT: layer1/conv
  %c1 = "tfrt_test.print_debug_info"(%c0) : (!tfrt.chain) -> !tfrt.chain loc("layer1/conv")
  // CHECK-NEXT: Kernel has no debug info
  %c2 = "tfrt_test.print_debug_info"(%c1) : (!tfrt.chain) -> !tfrt.chain loc("model.py":3:1)
  // CHECK-NEXT: ab
  %c3 = "tfrt_test.print_debug_info"(%c2) : (!tfrt.chain) -> !tfrt.chain loc(fused["a", "model.py":4:2, "b"])
  // CHECK-EMPTY:
  %c4 = "tfrt_test.print_debug_info"(%c3) : (!tfrt.chain) -> !tfrt.chain loc(fused["model.py":5:1, "model.py":5:9])
  // CHECK-NEXT: callee
  %c5 = "tfrt_test.print_debug_info"(%c4) : (!tfrt.chain) -> !tfrt.chain loc(callsite("callee" at "model.py":6:1))
  // CHECK-NEXT: Kernel has no debug info
  %c6 = "tfrt_test.print_debug_info"(%c5) : (!tfrt.chain) -> !tfrt.chain loc(callsite("model.py":7:1 at "caller"))
  tfrt.return %c6 : !tfrt.chain
}
// CHECK-NEXT: 'names' returned !tfrt.chain value
