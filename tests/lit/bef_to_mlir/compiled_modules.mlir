// Symbols in `tfrt.compiled` modules come back as symbol references, and each module they
// name comes back once, at the top of the module, whatever number of kernels refer into it.
// RUN: rtx translate --bef-to-mlir %s.bef | rtx opt | FileCheck %s

// CHECK: module {
// CHECK-NEXT: module @gpu attributes {tfrt.compiled} {
// CHECK-NEXT:   func.func @scale(%arg0: memref<4xf32>) {
// CHECK-NEXT:     return
// CHECK:      module @cpu attributes {tfrt.compiled} {
// CHECK-NEXT:   func.func @add
// CHECK-NOT:  module @gpu
module @gpu attributes {tfrt.compiled} {
  func.func @scale(%buffer: memref<4xf32>) {
    func.return
  }
  func.func @shift(%buffer: memref<4xf32>) {
    func.return
  }
}

module @cpu attributes {tfrt.compiled} {
  func.func @add() {
    func.return
  }
}

// CHECK-LABEL: func.func @launch
func.func @launch() {
  // CHECK-NEXT: "t.launch"() {kernel = @gpu::@scale} : () -> ()
  // CHECK-NEXT: "t.launch"() {kernel = @gpu::@shift} : () -> ()
  // CHECK-NEXT: "t.launch"() {kernel = @cpu::@add} : () -> ()
  // CHECK-NEXT: "t.launch"() {kernel = @gpu::@scale} : () -> ()
  // CHECK-NEXT: "t.launch"() {kernel = @gpu} : () -> ()
  "t.launch"() {kernel = @gpu::@scale} : () -> ()
  "t.launch"() {kernel = @gpu::@shift} : () -> ()
  "t.launch"() {kernel = @cpu::@add} : () -> ()
  "t.launch"() {kernel = @gpu::@scale} : () -> ()
  "t.launch"() {kernel = @gpu} : () -> ()
  tfrt.return
}
