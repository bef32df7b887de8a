// RUN: rtx bef-exec --host_allocator_type test_fixed_size_1k %s.bef 2>&1 | FileCheck %s

// TFRT's test allocator: 1 KiB in all. Each block is its data behind a 64-byte header, and
// every allocation, refusal and free is reported. A refused tensor is an error for what uses it
// and nothing else; what a function frees is there for the next one.

// CHECK: Choosing fixed size malloc.

// A tensor of 112 i32s (448 bytes, a 512-byte block), filled once `%ch` is ready.
func.func @tensor_after(%ch: !tfrt.chain) -> (!tfrt.chain, !tfrt_tensor.tensor) {
  // expected-error @+1 {{runtime error: Cannot allocate tensor}}
  %t = tfrt_dht.create_uninitialized_tensor.i32.1 [112 : i64]
  %ch0 = tfrt_dht.fill_tensor_with_constant.i32 %t, %ch 7 : i32
  tfrt.return %ch0, %t : !tfrt.chain, !tfrt_tensor.tensor
}

// CHECK-LABEL: --- Running 'two_fit_the_third_does_not'
func.func @two_fit_the_third_does_not() -> (!tfrt.chain, !tfrt_tensor.tensor, !tfrt_tensor.tensor) {
  %ch0 = tfrt.new.chain
  // CHECK-NEXT: Allocating 512 bytes. 512 remaining.
  %ch1, %a = tfrt.call @tensor_after(%ch0) : (!tfrt.chain) -> (!tfrt.chain, !tfrt_tensor.tensor)
  // CHECK-NEXT: Allocating 512 bytes. 0 remaining.
  %ch2, %b = tfrt.call @tensor_after(%ch1) : (!tfrt.chain) -> (!tfrt.chain, !tfrt_tensor.tensor)
  // CHECK-NEXT: Attempted to allocate 512 bytes. However current capacity is only 0.
  %ch3, %c = tfrt.call @tensor_after(%ch2) : (!tfrt.chain) -> (!tfrt.chain, !tfrt_tensor.tensor)
  // The error skips only what depends on it: one of these prints.
  %same, %ch4 = tfrt_dht.tensor_equal.i32 %a, %b, %ch2
  %ch5 = tfrt.print.i1 %same, %ch4
  %ch6 = tfrt.print.i1 %same, %ch3
  // The first two tensors live until the driver lets go of the results.
  tfrt.return %ch3, %a, %b : !tfrt.chain, !tfrt_tensor.tensor, !tfrt_tensor.tensor
}
// CHECK-NEXT: 'two_fit_the_third_does_not' returned <<error: Cannot allocate tensor>>,!tfrt_tensor.tensor value,!tfrt_tensor.tensor value
// CHECK-DAG: int1 = 1
// CHECK-DAG: Freeing 512 bytes. 512 available.
// CHECK-DAG: Freeing 512 bytes. 1024 available.
// CHECK-NOT: int1

// CHECK-LABEL: --- Running 'what_was_freed_is_served_again'
func.func @what_was_freed_is_served_again() {
  // CHECK-NEXT: Allocating 864 bytes. 160 remaining.
  %t = tfrt_dht.create_uninitialized_tensor.f32.1 [200 : i64]
  // CHECK-NEXT: Freeing 864 bytes. 1024 available.
  tfrt.return
}

// CHECK-LABEL: --- Running 'more_than_the_capacity'
func.func @more_than_the_capacity() {
  // 1024 bytes of data: with the header the block is larger than the whole capacity.
  // CHECK-NEXT: Attempted to allocate 1088 bytes. However current capacity is only 1024.
  // expected-error @+1 {{runtime error: Cannot allocate tensor}}
  %t = tfrt_dht.create_uninitialized_tensor.i32.2 [16 : i64, 16 : i64]
  tfrt.return
}

// CHECK-LABEL: --- Running 'buffers_too'
func.func @buffers_too() {
  %size = tfrt.constant.i64 961
  %alignment = tfrt.constant.i64 64
  // With the 64-byte header, one byte more than there is.
  // CHECK-NEXT: Attempted to allocate 1025 bytes. However current capacity is only 1024.
  // expected-error @+1 {{runtime error: Cannot allocate host buffer}}
  %refused = tfrt_dht.allocate_buffer %size, %alignment
  tfrt.return
}
