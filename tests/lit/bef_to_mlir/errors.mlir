// Input that is no BEF file, or a BEF file cut short, is an error that says what is wrong and
// where; the program reads stdin when given no file.
// RUN: rtx translate --mlir-to-bef %s -o %t.bef
// RUN: head -c 40 %t.bef | not rtx translate --bef-to-mlir 2>&1 | FileCheck %s --check-prefix=CUT
// RUN: not rtx translate --bef-to-mlir %s 2>&1 | FileCheck %s --check-prefix=NOT-BEF
// RUN: rtx translate --bef-to-mlir - < %t.bef | FileCheck %s

// CUT: rtx translate: `<stdin>`: malformed BEF at byte {{[0-9]+}}: section {{[0-9]+}} (header at byte {{[0-9]+}}): {{[0-9]+}} bytes run past the end
// NOT-BEF: rtx translate: `{{.*}}errors.mlir`: not a BEF file: it does not start with the magic 0B EF
// CHECK: func.func @f() -> i32
func.func @f() -> i32 {
  %x = tfrt.constant.i32 1
  tfrt.return %x : i32
}
