// Functions come back with their kind, arguments, results and kernels in order: async ones,
// `tfrt.sync` ones, body-less `tfrt.native` ones, callees named by symbol, and anonymous
// functions as the regions of the kernels that hold them.
// RUN: rtx translate --bef-to-mlir %s.bef | rtx opt | FileCheck %s

// CHECK: func.func private @native_add(i32, i32) -> i32 attributes {tfrt.native}
func.func private @native_add(%a: i32, %b: i32) -> i32 attributes {tfrt.native}

// CHECK-LABEL: func.func @sync_mul(%arg0: i32, %arg1: i32) -> i32 attributes {tfrt.sync} {
// CHECK-NEXT: %0 = "t.sync_mul"(%arg0, %arg1) : (i32, i32) -> i32
// CHECK-NEXT: tfrt.return %0 : i32
func.func @sync_mul(%a: i32, %b: i32) -> i32 attributes {tfrt.sync} {
  %c = "t.sync_mul"(%a, %b) : (i32, i32) -> i32
  tfrt.return %c : i32
}

// CHECK-LABEL: func.func @calls(%arg0: i32) -> (i32, !tfrt.chain) {
func.func @calls(%x: i32) -> (i32, !tfrt.chain) {
  // CHECK-NEXT: %0 = tfrt.new.chain
  // CHECK-NEXT: %1 = tfrt.call @sync_mul(%arg0, %arg0) : (i32, i32) -> i32
  // CHECK-NEXT: %2 = "t.native_call"(%1) {callee = @native_add} : (i32) -> i32
  // CHECK-NEXT: %3:2 = "t.pair"(%2) : (i32) -> (i32, !tfrt.chain)
  // CHECK-NEXT: tfrt.return %3#0, %0 : i32, !tfrt.chain
  %ch = tfrt.new.chain
  %y = tfrt.call @sync_mul(%x, %x) : (i32, i32) -> i32
  %z = "t.native_call"(%y) {callee = @native_add} : (i32) -> i32
  %p:2 = "t.pair"(%z) : (i32) -> (i32, !tfrt.chain)
  tfrt.return %p#0, %ch : i32, !tfrt.chain
}

// Callees keep the attribute names of their op's custom form.
// CHECK-LABEL: func.func @control_flow(%arg0: i1, %arg1: i32, %arg2: i32) -> i32 {
func.func @control_flow(%c: i1, %i: i32, %x: i32) -> i32 {
  // CHECK-NEXT: %0 = tfrt.cond %arg0 @sync_mul @sync_mul(%arg2, %arg2) : (i32, i32) -> (i32)
  %a = tfrt.cond %c @sync_mul @sync_mul (%x, %x) : (i32, i32) -> (i32)
  // CHECK-NEXT: %1 = tfrt.case %arg1 [@sync_mul, @calls_add](%0, %0) : (i32, i32) -> (i32)
  %b = tfrt.case %i [@sync_mul, @calls_add] (%a, %a) : (i32, i32) -> (i32)
  // CHECK-NEXT: %2 = tfrt.if %arg0, %1, %arg1 : (i32, i32) -> (i32) {
  // CHECK-NEXT:   %3 = tfrt.repeat.i32 %arg1, %1 : i32 {
  // CHECK-NEXT:     tfrt.return %1 : i32
  // CHECK-NEXT:   }
  // CHECK-NEXT:   tfrt.return %3 : i32
  // CHECK-NEXT: } else {
  // CHECK-NEXT:   %3 = tfrt.add.i32 %1, %1
  // CHECK-NEXT:   tfrt.return %3 : i32
  // CHECK-NEXT: }
  %r = tfrt.if %c, %b, %i : (i32, i32) -> (i32) {
    %n = tfrt.repeat.i32 %i, %b : i32 {
      tfrt.return %b : i32
    }
    tfrt.return %n : i32
  } else {
    %s = tfrt.add.i32 %b, %b
    tfrt.return %s : i32
  }
  // CHECK-NEXT: tfrt.return %2 : i32
  tfrt.return %r : i32
}

// CHECK-LABEL: func.func @calls_add(%arg0: i32, %arg1: i32) -> i32 {
// CHECK-NEXT: %0 = tfrt.add.i32 %arg0, %arg1
func.func @calls_add(%a: i32, %b: i32) -> i32 {
  %c = tfrt.add.i32 %a, %b
  tfrt.return %c : i32
}
