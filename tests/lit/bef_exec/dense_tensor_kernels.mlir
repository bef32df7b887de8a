// RUN: rtx bef-exec %s.bef 2>&1 | FileCheck %s

// Comparing dense tensors exactly and within units in the last place, and the element types
// that are only created and filled (half floats, kept as their bits) or given as pairs of
// numbers (complex ones).

// 1 + 5 * 2^-23: five f32 steps above 1. The tolerance is epsilon * |x + y| * N, about 2N
// steps near 1: 4 for tensor_allclose (N = 2), 6 for N = 3.
// CHECK-LABEL: --- Running 'close_floats'
func.func @close_floats() -> (i1, i1, i1, i1) {
  %ch0 = tfrt.new.chain
  %a = tfrt_dht.create_uninitialized_tensor.f32.1 [2 : i64]
  %ch1 = tfrt_dht.set_tensor_with_constant_values.f32 %a, %ch0 [1.0 : f32, -2.0 : f32]
  %b = tfrt_dht.create_uninitialized_tensor.f32.1 [2 : i64]
  %ch2 = tfrt_dht.set_tensor_with_constant_values.f32 %b, %ch1 [1.00000059604644775390625 : f32, -2.0 : f32]
  %equal, %ch3 = tfrt_dht.tensor_equal.f32 %a, %b, %ch2
  %two_ulps, %ch4 = "tfrt_dht.tensor_allclose.f32"(%a, %b, %ch3) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> (i1, !tfrt.chain)
  %three_ulps, %ch5 = "tfrt_dht.tensor_allclose.3ulp.f32"(%a, %b, %ch4) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> (i1, !tfrt.chain)
  // Differences below the smallest normal float are always close.
  %c = tfrt_dht.create_uninitialized_tensor.f32.1 [2 : i64]
  %ch6 = tfrt_dht.set_tensor_with_constant_values.f32 %c, %ch5 [0.0 : f32, 1.0e-39 : f32]
  %d = tfrt_dht.create_uninitialized_tensor.f32.1 [2 : i64]
  %ch7 = tfrt_dht.set_tensor_with_constant_values.f32 %d, %ch6 [1.0e-39 : f32, 0.0 : f32]
  %tiny, %ch8 = "tfrt_dht.tensor_allclose.f32"(%c, %d, %ch7) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> (i1, !tfrt.chain)
  tfrt.return %equal, %two_ulps, %three_ulps, %tiny : i1, i1, i1, i1
}
// CHECK-NEXT: 'close_floats' returned 0,0,1,1

// CHECK-LABEL: --- Running 'close_needs_the_same_shape_and_integers_equal'
func.func @close_needs_the_same_shape_and_integers_equal() -> (i1, i1, i1) {
  %ch0 = tfrt.new.chain
  %a = tfrt_dht.create_uninitialized_tensor.i64.1 [4 : i64]
  %ch1 = tfrt_dht.set_tensor_with_constant_values.i64 %a, %ch0 [1 : i64, 2 : i64, 3 : i64, 4 : i64]
  %b = tfrt_dht.create_uninitialized_tensor.i64.1 [4 : i64]
  %ch2 = tfrt_dht.set_tensor_with_constant_values.i64 %b, %ch1 [1 : i64, 2 : i64, 3 : i64, 5 : i64]
  %c = tfrt_dht.create_uninitialized_tensor.i64.2 [2 : i64, 2 : i64]
  %ch3 = tfrt_dht.set_tensor_with_constant_values.i64 %c, %ch2 [1 : i64, 2 : i64, 3 : i64, 4 : i64]
  %ab, %ch4 = "tfrt_dht.tensor_allclose.100000ulp.i64"(%a, %b, %ch3) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> (i1, !tfrt.chain)
  %aa, %ch5 = "tfrt_dht.tensor_allclose.i64"(%a, %a, %ch4) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> (i1, !tfrt.chain)
  %ac, %ch6 = "tfrt_dht.tensor_allclose.i64"(%a, %c, %ch5) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> (i1, !tfrt.chain)
  tfrt.return %ab, %aa, %ac : i1, i1, i1
}
// CHECK-NEXT: 'close_needs_the_same_shape_and_integers_equal' returned 0,1,0

// CHECK-LABEL: --- Running 'complex_values_come_in_pairs'
func.func @complex_values_come_in_pairs() -> (i1, i1) {
  %ch0 = tfrt.new.chain
  %a = tfrt_dht.create_uninitialized_tensor.complex64.1 [2 : i64]
  %ch1 = tfrt_dht.set_tensor_with_constant_values.complex64 %a, %ch0 [1.0 : f32, 2.0 : f32, 3.0 : f32, -4.0 : f32]
  // CHECK-NEXT: DenseHostTensor dtype = complex64, shape = [2], values = [(1.000000e+00,2.000000e+00), (3.000000e+00,-4.000000e+00)]
  %ch2 = tfrt_dht.print_tensor %a, %ch1
  %b = tfrt_dht.create_uninitialized_tensor.complex64.1 [2 : i64]
  %x = tfrt.constant.complex64 1.0, 2.0
  %y = tfrt.constant.complex64 3.0, -4.00000047683715820312
  %ch3 = "tfrt_dht.set_tensor_with_values.complex64"(%b, %ch2, %x, %y) : (!tfrt_tensor.tensor, !tfrt.chain, complex<f32>, complex<f32>) -> !tfrt.chain
  // -4 and one f32 step below it: equal to 2 ulps, but not exactly.
  %equal, %ch4 = tfrt_dht.tensor_equal.complex64 %a, %b, %ch3
  %close, %ch5 = "tfrt_dht.tensor_allclose.complex64"(%a, %b, %ch4) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> (i1, !tfrt.chain)
  // expected-error @+1 {{runtime error: Incorrect number of real and imaginary values for the complex tensor: 3, but expected 4}}
  %ch6 = tfrt_dht.set_tensor_with_constant_values.complex64 %a, %ch5 [1.0 : f32, 2.0 : f32, 3.0 : f32]
  tfrt.return %equal, %close : i1, i1
}
// CHECK-NEXT: 'complex_values_come_in_pairs' returned 0,1

// CHECK-LABEL: --- Running 'half_floats'
func.func @half_floats() -> !tfrt.chain {
  %ch0 = tfrt.new.chain
  // These ops have no custom form.
  %h = "tfrt_dht.create_uninitialized_tensor.f16.1"() {shape = [2 : i64]} : () -> !tfrt_tensor.tensor
  // 1.0 in half precision is 0x3c00; in bfloat16, 0x3f80.
  %ch1 = "tfrt_dht.fill_tensor_with_constant.f16"(%h, %ch0) {value = 1.0 : f16} : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  // CHECK-NEXT: DenseHostTensor dtype = f16, shape = [2], values = [fp16(15360), fp16(15360)]
  %ch2 = tfrt_dht.print_tensor %h, %ch1
  %b = "tfrt_dht.create_uninitialized_tensor.bf16.1"() {shape = [3 : i64]} : () -> !tfrt_tensor.tensor
  %ch3 = "tfrt_dht.set_tensor_with_constant_values.bf16"(%b, %ch2) {values = [1.0 : bf16, 0.0 : bf16, 1.0 : bf16]}
      : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  // CHECK-NEXT: DenseHostTensor dtype = bf16, shape = [3], values = [bf16(16256), bf16(0), bf16(16256)]
  %ch4 = tfrt_dht.print_tensor %b, %ch3
  tfrt.return %ch4 : !tfrt.chain
}

// CHECK-LABEL: --- Running 'no_op_waits_for_a_tensor'
func.func @no_op_waits_for_a_tensor() -> !tfrt.chain {
  %t = tfrt_dht.create_uninitialized_tensor.ui8.1 [3 : i64]
  %ch = "tfrt_dht.no_op_ht"(%t) : (!tfrt_tensor.tensor) -> !tfrt.chain
  // CHECK-NEXT: DenseHostTensor dtype = u8, shape = [3], values = [0, 0, 0]
  %ch1 = tfrt_dht.print_tensor %t, %ch
  tfrt.return %ch1 : !tfrt.chain
}
