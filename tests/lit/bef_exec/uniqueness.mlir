// RUN: rtx bef-exec %s.bef | FileCheck %s
// RUN: rtx bef-exec --work_queue_type=mstd:2 --functions=result_kept,argument_kept,indirect_with_another_use %s.bef \
// RUN:   | FileCheck %s --check-prefix=MSTD

// `tfrt_test.get_uniqueness` tells whether a kernel holds the only reference to a value (and
// could reuse it in place). A callee's kernels see the results the caller holds, so a value the
// caller still has, as an argument it uses again or as a result, is never unique to them; one
// the caller has let go of is. An indirect value is unique only with its target.

// Reports whether %a and %b are unique, %b from a kernel of another stream (which, on the `s`
// queue, runs once the caller's call kernel has returned), and returns %b.
func.func @observe(%ch: !tfrt.chain, %a: i32, %b: i32) -> (!tfrt.chain, i32) attributes {tfrt.cost_threshold = 1 : i64} {
  %ua = "tfrt_test.get_uniqueness"(%a) : (i32) -> i1
  %ub = "tfrt_test.get_uniqueness"(%b) : (i32) -> i1
  %ch0 = "tfrt_test.print_bool"(%ch, %ua) : (!tfrt.chain, i1) -> !tfrt.chain
  %ch1 = "tfrt_test.print_bool"(%ch0, %ub) : (!tfrt.chain, i1) -> !tfrt.chain
  tfrt.return %ch1, %b : !tfrt.chain, i32
}

// CHECK-LABEL: --- Running 'result_dropped'
func.func @result_dropped() -> !tfrt.chain {
  %ch = tfrt.new.chain
  %a = tfrt.constant.i32 1
  %b = tfrt.constant.i32 2
  // %a: the caller's call kernel still holds it. %b: by the time it is looked at, nobody but
  // the callee does.
  // CHECK-NEXT: false
  // CHECK-NEXT: true
  %ch0, %r = tfrt.call @observe(%ch, %a, %b) : (!tfrt.chain, i32, i32) -> (!tfrt.chain, i32)
  tfrt.return %ch0 : !tfrt.chain
}

// CHECK-LABEL: --- Running 'result_kept'
// MSTD-LABEL: --- Running 'result_kept'
func.func @result_kept() -> !tfrt.chain {
  %ch = tfrt.new.chain
  %a = tfrt.constant.i32 1
  %b = tfrt.constant.i32 2
  // CHECK-NEXT: false
  // CHECK-NEXT: false
  // MSTD-NEXT: false
  // MSTD-NEXT: false
  %ch0, %r = tfrt.call @observe(%ch, %a, %b) : (!tfrt.chain, i32, i32) -> (!tfrt.chain, i32)
  // CHECK-NEXT: int32 = 2
  // MSTD-NEXT: int32 = 2
  %ch1 = tfrt.print.i32 %r, %ch0
  tfrt.return %ch1 : !tfrt.chain
}

// CHECK-LABEL: --- Running 'argument_kept'
// MSTD-LABEL: --- Running 'argument_kept'
func.func @argument_kept() -> !tfrt.chain {
  %ch = tfrt.new.chain
  %a = tfrt.constant.i32 1
  %b = tfrt.constant.i32 2
  // CHECK-NEXT: false
  // CHECK-NEXT: false
  // MSTD-NEXT: false
  // MSTD-NEXT: false
  %ch0, %r = tfrt.call @observe(%ch, %a, %b) : (!tfrt.chain, i32, i32) -> (!tfrt.chain, i32)
  // CHECK-NEXT: int32 = 2
  // MSTD-NEXT: int32 = 2
  %ch1 = tfrt.print.i32 %b, %ch0
  tfrt.return %ch1 : !tfrt.chain
}

// CHECK-LABEL: --- Running 'indirect_alone'
func.func @indirect_alone() -> !tfrt.chain {
  %ch = tfrt.new.chain
  %x = tfrt.constant.i32 7
  %i = "tfrt_test.make_indirect"(%x) : (i32) -> i32
  // CHECK-NEXT: true
  %u = "tfrt_test.get_uniqueness"(%i) : (i32) -> i1
  %ch0 = "tfrt_test.print_bool"(%ch, %u) : (!tfrt.chain, i1) -> !tfrt.chain
  tfrt.return %ch0 : !tfrt.chain
}

// CHECK-LABEL: --- Running 'indirect_with_another_use'
// MSTD-LABEL: --- Running 'indirect_with_another_use'
func.func @indirect_with_another_use() -> !tfrt.chain {
  %ch = tfrt.new.chain
  %x = tfrt.constant.i32 7
  %i = "tfrt_test.make_indirect"(%x) : (i32) -> i32
  // The indirect value has one reference, but its target is still %x, which the print after it
  // reads.
  // CHECK-NEXT: false
  // MSTD-NEXT: false
  %u = "tfrt_test.get_uniqueness"(%i) : (i32) -> i1
  %ch0 = "tfrt_test.print_bool"(%ch, %u) : (!tfrt.chain, i1) -> !tfrt.chain
  // CHECK-NEXT: int32 = 7
  // MSTD-NEXT: int32 = 7
  %ch1 = tfrt.print.i32 %x, %ch0
  tfrt.return %ch1 : !tfrt.chain
}
