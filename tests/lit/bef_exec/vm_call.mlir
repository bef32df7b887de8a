// RUN: rtx bef-exec --vm_module=%S/../../fixtures/bridge/bridge.vmfb %s 2>&1 | FileCheck %s
// RUN: rtx bef-exec --work_queue_type=mstd:2 --device=local-sync --vm_module=%S/../../fixtures/bridge/bridge.vmfb %s 2>&1 | FileCheck %s
// RUN: rtx bef-exec --print_error_code --vm_module=%S/../../fixtures/bridge/bridge.vmfb %s 2>&1 | FileCheck %s --check-prefix=CODE
// RUN: not rtx bef-exec %s 2>&1 | FileCheck %s --check-prefix=NOMODULE
// RUN: not rtx bef-exec --device=local-sync %s 2>&1 | FileCheck %s --check-prefix=NODEVICE
// NODEVICE: rtx bef-exec: `--device` is the device of the `--vm_module` modules, and none is given

// `rtx.vm.call` calls `bridge.scale` (tests/fixtures/bridge/src/bridge.mlir, compiled by
// iree-compile) with a dense host tensor and an f32; its result comes back as a tensor.

// CHECK-LABEL: --- Running 'scaled'
// NOMODULE-LABEL: --- Running 'scaled'
func.func @scaled() {
  %ch0 = tfrt.new.chain
  %x = tfrt_dht.create_uninitialized_tensor.f32.1 [4 : i64]
  %ch1 = tfrt_dht.set_tensor_with_constant_values.f32 %x, %ch0 [1.0 : f32, 2.0 : f32, 3.0 : f32, 4.0 : f32]
  %k = tfrt.constant.f32 2.5
  // The last chain orders the call after the tensor is filled; it is not passed.
  // NOMODULE: error: unexpected error: runtime error: rtx.vm.call: function `bridge.scale` not found in the context's modules (none)
  %y = "rtx.vm.call"(%x, %k, %ch1) {callee = "bridge.scale"} : (!tfrt_tensor.tensor, f32, !tfrt.chain) -> !tfrt_tensor.tensor
  // CHECK-NEXT: DenseHostTensor dtype = f32, shape = [4], values = [2.500000e+00, 5.000000e+00, 7.500000e+00, 1.000000e+01]
  %ch2 = tfrt_dht.print_tensor %y, %ch1
  tfrt.return
}

// A `vm.fail` inside the program (a negative scale) is the error of the kernel's result, with
// the VM's message: its dependants are skipped, the rest of the graph runs.
// CHECK-LABEL: --- Running 'failing_call'
// CODE-LABEL: --- Running 'failing_call'
func.func @failing_call() -> (!tfrt.chain, !tfrt.chain, f32) {
  %ch0 = tfrt.new.chain
  %x = tfrt_dht.create_uninitialized_tensor.f32.1 [4 : i64]
  %ch1 = tfrt_dht.set_tensor_with_constant_values.f32 %x, %ch0 [1.0 : f32, 2.0 : f32, 3.0 : f32, 4.0 : f32]
  %k = tfrt.constant.f32 -1.0
  // expected-error @+1 {{runtime error: the scale must not be negative}}
  %y = "rtx.vm.call"(%x, %k, %ch1) {callee = "bridge.scale"} : (!tfrt_tensor.tensor, f32, !tfrt.chain) -> !tfrt_tensor.tensor
  %ch2 = tfrt_dht.print_tensor %y, %ch1
  // CHECK-NEXT: DenseHostTensor dtype = f32, shape = [4], values = [1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]
  %ch3 = tfrt_dht.print_tensor %x, %ch1
  %two = tfrt.constant.f32 2.0
  %four = tfrt.add.f32 %two, %two
  // Returned, so that the print has run when the driver reports the results.
  tfrt.return %ch2, %ch3, %four : !tfrt.chain, !tfrt.chain, f32
}
// CHECK-NEXT: 'failing_call' returned <<error: the scale must not be negative>>,!tfrt.chain value,4.000000e+00
// CODE: 'failing_call' returned <<error: the scale must not be negative, code: FAILED_PRECONDITION>>,!tfrt.chain value,4.000000e+00

// Operands that do not fit the callee are kernel errors that name it and what it takes.
// CHECK-LABEL: --- Running 'wrong_operands'
func.func @wrong_operands() {
  %ch0 = tfrt.new.chain
  %x = tfrt_dht.create_uninitialized_tensor.f32.1 [4 : i64]
  // expected-error @+1 {{runtime error: rtx.vm.call: `bridge.scale` (calling convention `0rf_r`) takes 2 arguments, but the kernel has 1 operands (less a last chain)}}
  %y = "rtx.vm.call"(%x) {callee = "bridge.scale"} : (!tfrt_tensor.tensor) -> !tfrt_tensor.tensor
  %k = tfrt.constant.f32 1.0
  // expected-error @+1 {{runtime error: rtx.vm.call: argument 0 of `bridge.scale` is a buffer view, which a dense host tensor passes, but the operand holds f32}}
  %z = "rtx.vm.call"(%k, %k) {callee = "bridge.scale"} : (f32, f32) -> !tfrt_tensor.tensor
  %i = tfrt.constant.i32 1
  // expected-error @+1 {{runtime error: argument 1 of `bridge.scale`: expected f32 but the value holds i32}}
  %w = "rtx.vm.call"(%x, %i) {callee = "bridge.scale"} : (!tfrt_tensor.tensor, i32) -> !tfrt_tensor.tensor
  // expected-error @+1 {{runtime error: rtx.vm.call: function `bridge.missing` not found in the context's modules (hal, bridge)}}
  %v = "rtx.vm.call"(%x, %k) {callee = "bridge.missing"} : (!tfrt_tensor.tensor, f32) -> !tfrt_tensor.tensor
  tfrt.return
}
// The wrong shape reaches the program, whose input assert refuses it.
// CHECK-LABEL: --- Running 'wrong_shape'
func.func @wrong_shape() {
  %x = tfrt_dht.create_uninitialized_tensor.f32.1 [3 : i64]
  %k = tfrt.constant.f32 1.0
  // expected-error @+1 {{runtime error: input0 shape dimension 0 mismatch; expected 4 but have 3}}
  %y = "rtx.vm.call"(%x, %k) {callee = "bridge.scale"} : (!tfrt_tensor.tensor, f32) -> !tfrt_tensor.tensor
  tfrt.return
}
