// Text to bytecode and back keeps operations and attributes; a truncated file is an error naming
// the byte offset.
// RUN: rtx translate --mlir-to-mlirbc %s -o %t.mlirbc
// RUN: rtx translate --mlirbc-to-mlir %t.mlirbc | FileCheck %s
// RUN: head -c 20 %t.mlirbc > %t.cut
// RUN: not rtx translate --mlirbc-to-mlir %t.cut 2>&1 | FileCheck %s --check-prefix=TRUNCATED

// CHECK: "test.constant"() {{.*}}42 : i32{{.*}} : () -> (i32)
// CHECK-NEXT: "test.print"(%[[V:.*]]) : (i32) -> ()
// TRUNCATED: MLIR bytecode: at byte 17: unexpected end of data
"builtin.module"() ({
  %0 = "test.constant"() {value = 42 : i32} : () -> i32
  "test.print"(%0) : (i32) -> ()
}) : () -> ()
