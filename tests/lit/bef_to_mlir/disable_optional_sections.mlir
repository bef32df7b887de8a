// Without the optional sections, BEF no longer says what attributes are called or hold, nor
// the types of kernel results: as TFRT does, the attributes are named attrN and hold
// 0xDEADBEEF as an i32, the results are of type none, and a warning says what is missing.
// Function argument types live in the function index and stay.
// RUN: rtx translate --mlir-to-bef --disable-optional-sections %s | rtx translate --bef-to-mlir --mlir-print-op-generic 2>&1 | FileCheck %s

// CHECK: warning: Missing AttributeTypes, AttributeNames or RegisterTypes sections.
// CHECK-LABEL: "func.func"
// CHECK-SAME: function_type = (i32) -> none, sym_name = "f"
func.func @f(%x: i32) -> i32 {
  // CHECK-NEXT: ^bb0(%arg0: i32):
  // CHECK-NEXT: %0 = "t.op"(%arg0) {attr0 = -559038737 : i32, attr1 = -559038737 : i32} : (i32) -> none
  %y = "t.op"(%x) {value = 42 : i32, name = "n"} : (i32) -> i32
  // CHECK-NEXT: "tfrt.return"(%0) : (none) -> ()
  tfrt.return %y : i32
}
