// RUN: rtx bef-exec %s.bef 2>&1 | FileCheck %s
// RUN: rtx bef-exec --work_queue_type=mstd:2 %s.bef 2>&1 | FileCheck %s

// The `nn.*` layers on small tensors whose results are worked out by hand in the comments.
// Their agreement with numpy on larger, random operands is crates/runtime/tests/all/nn_kernels.rs's.

// [[1, 2], [3, 4]] x [[5, 6], [7, 8]] = [[19, 22], [43, 50]]; plus C = [1, -1] per row.
// CHECK-LABEL: --- Running 'gemm_with_bias'
func.func @gemm_with_bias() {
  %ch0 = tfrt.new.chain
  %a = tfrt_dht.create_uninitialized_tensor.f32.2 [2 : i64, 2 : i64]
  %ch1 = tfrt_dht.set_tensor_with_constant_values.f32 %a, %ch0 [1.0 : f32, 2.0 : f32, 3.0 : f32, 4.0 : f32]
  %b = tfrt_dht.create_uninitialized_tensor.f32.2 [2 : i64, 2 : i64]
  %ch2 = tfrt_dht.set_tensor_with_constant_values.f32 %b, %ch1 [5.0 : f32, 6.0 : f32, 7.0 : f32, 8.0 : f32]
  %c = tfrt_dht.create_uninitialized_tensor.f32.1 [2 : i64]
  %ch3 = tfrt_dht.set_tensor_with_constant_values.f32 %c, %ch2 [1.0 : f32, -1.0 : f32]
  %y = "nn.gemm.f32"(%a, %b, %c, %ch3) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt_tensor.tensor
  // CHECK-NEXT: shape = [2, 2], values = [2.000000e+01, 2.100000e+01, 4.400000e+01, 4.900000e+01]
  %ch4 = tfrt_dht.print_tensor %y, %ch3
  // transB reads B as [[5, 7], [6, 8]]: [[1*5+2*7, 1*6+2*8], ...] = [[19, 22], [43, 50]] * 0.5.
  %z = "nn.gemm.f32"(%a, %b, %ch3) {transB = 1 : i64, alpha = 0.5 : f32} : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt_tensor.tensor
  // CHECK-NEXT: shape = [2, 2], values = [8.500000e+00, 1.150000e+01, 1.950000e+01, 2.650000e+01]
  %ch5 = tfrt_dht.print_tensor %z, %ch4
  tfrt.return
}

// A 3x3 image 1..9 and a 2x2 filter of ones: each output is the sum of a 2x2 window.
// CHECK-LABEL: --- Running 'conv_pool_and_activations'
func.func @conv_pool_and_activations() {
  %ch0 = tfrt.new.chain
  %x = tfrt_dht.create_uninitialized_tensor.f32.4 [1 : i64, 1 : i64, 3 : i64, 3 : i64]
  %ch1 = tfrt_dht.set_tensor_with_constant_values.f32 %x, %ch0 [1.0 : f32, 2.0 : f32, 3.0 : f32, 4.0 : f32, 5.0 : f32, 6.0 : f32, 7.0 : f32, 8.0 : f32, 9.0 : f32]
  %w = tfrt_dht.create_uninitialized_tensor.f32.4 [1 : i64, 1 : i64, 2 : i64, 2 : i64]
  %ch2 = tfrt_dht.fill_tensor_with_constant.f32 %w, %ch1 1.0 : f32
  %b = tfrt_dht.create_uninitialized_tensor.f32.1 [1 : i64]
  %ch3 = tfrt_dht.fill_tensor_with_constant.f32 %b, %ch2 -14.0 : f32
  // Windows sum to 12, 16, 24, 28; less 14: -2, 2, 10, 14.
  %y = "nn.conv2d.f32"(%x, %w, %b, %ch3) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt_tensor.tensor
  // CHECK-NEXT: shape = [1, 1, 2, 2], values = [-2.000000e+00, 2.000000e+00, 1.000000e+01, 1.400000e+01]
  %ch4 = tfrt_dht.print_tensor %y, %ch3
  %r = "nn.relu.f32"(%y) : (!tfrt_tensor.tensor) -> !tfrt_tensor.tensor
  // CHECK-NEXT: shape = [1, 1, 2, 2], values = [0.000000e+00, 2.000000e+00, 1.000000e+01, 1.400000e+01]
  %ch5 = tfrt_dht.print_tensor %r, %ch4
  // The epilogue an importer fuses: Z = %y added to the same sums, then clamped to [0, 12]:
  // -2 + -2, 2 + 2, 10 + 10, 14 + 14 = -4, 4, 20, 28 -> 0, 4, 12, 12.
  %c = "nn.conv2d.f32"(%x, %w, %b, %y, %ch3) {activation = "clip", min = 0.0 : f32, max = 12.0 : f32} : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt_tensor.tensor
  // CHECK-NEXT: shape = [1, 1, 2, 2], values = [0.000000e+00, 4.000000e+00, 1.200000e+01, 1.200000e+01]
  %ch51 = tfrt_dht.print_tensor %c, %ch5
  // Leaky: -4 * 0.5 = -2; the rest pass.
  %l = "nn.conv2d.f32"(%x, %w, %b, %y, %ch3) {activation = "leaky_relu", alpha = 0.5 : f32} : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt_tensor.tensor
  // CHECK-NEXT: shape = [1, 1, 2, 2], values = [-2.000000e+00, 4.000000e+00, 2.000000e+01, 2.800000e+01]
  %ch52 = tfrt_dht.print_tensor %l, %ch51
  // Stride 2 and padding 1 on every side: windows at rows and columns -1 and 1.
  %s = "nn.conv2d.f32"(%x, %w, %ch3) {strides = [2, 2], pads = [1, 1, 1, 1]} : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt_tensor.tensor
  // CHECK-NEXT: shape = [1, 1, 2, 2], values = [1.000000e+00, 5.000000e+00, 1.100000e+01, 2.800000e+01]
  %ch6 = tfrt_dht.print_tensor %s, %ch52
  // 2x2 max pooling at stride 2 in ceil mode: the last row and column are windows of their own.
  %m = "nn.max_pool2d.f32"(%x, %ch3) {kernel_shape = [2, 2], strides = [2, 2], ceil_mode = 1 : i64} : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt_tensor.tensor
  // CHECK-NEXT: shape = [1, 1, 2, 2], values = [5.000000e+00, 6.000000e+00, 8.000000e+00, 9.000000e+00]
  %ch7 = tfrt_dht.print_tensor %m, %ch6
  // Averages of the same windows: (1+2+4+5)/4, (3+6)/2, (7+8)/2, 9.
  %a = "nn.average_pool2d.f32"(%x, %ch3) {kernel_shape = [2, 2], strides = [2, 2], ceil_mode = 1 : i64} : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt_tensor.tensor
  // CHECK-NEXT: shape = [1, 1, 2, 2], values = [3.000000e+00, 4.500000e+00, 7.500000e+00, 9.000000e+00]
  %ch8 = tfrt_dht.print_tensor %a, %ch7
  %g = "nn.global_average_pool.f32"(%x, %ch3) : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt_tensor.tensor
  // CHECK-NEXT: shape = [1, 1, 1, 1], values = [5.000000e+00]
  %ch9 = tfrt_dht.print_tensor %g, %ch8
  tfrt.return
}

// [[1, 2, 3]] + [[10], [20]] broadcasts to [[11, 12, 13], [21, 22, 23]]; softmax of [0, ln 3]
// is [1/4, 3/4]; the transpose of [[1, 2, 3]] is a column; concat puts rows after rows.
// CHECK-LABEL: --- Running 'broadcast_softmax_and_layout'
func.func @broadcast_softmax_and_layout() {
  %ch0 = tfrt.new.chain
  %a = tfrt_dht.create_uninitialized_tensor.f32.2 [1 : i64, 3 : i64]
  %ch1 = tfrt_dht.set_tensor_with_constant_values.f32 %a, %ch0 [1.0 : f32, 2.0 : f32, 3.0 : f32]
  %b = tfrt_dht.create_uninitialized_tensor.f32.2 [2 : i64, 1 : i64]
  %ch2 = tfrt_dht.set_tensor_with_constant_values.f32 %b, %ch1 [10.0 : f32, 20.0 : f32]
  %sum = "nn.add.f32"(%a, %b, %ch2) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> !tfrt_tensor.tensor
  // CHECK-NEXT: shape = [2, 3], values = [1.100000e+01, 1.200000e+01, 1.300000e+01, 2.100000e+01, 2.200000e+01, 2.300000e+01]
  %ch3 = tfrt_dht.print_tensor %sum, %ch2
  %l = tfrt_dht.create_uninitialized_tensor.f32.1 [2 : i64]
  %ch4 = tfrt_dht.set_tensor_with_constant_values.f32 %l, %ch3 [0.0 : f32, 1.0986123 : f32]
  %p = "nn.softmax.f32"(%l, %ch4) : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt_tensor.tensor
  // CHECK-NEXT: shape = [2], values = [2.500000e-01, 7.50000{{[01]}}e-01]
  %ch5 = tfrt_dht.print_tensor %p, %ch4
  %t = "nn.transpose"(%a, %ch1) : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt_tensor.tensor
  // CHECK-NEXT: shape = [3, 1], values = [1.000000e+00, 2.000000e+00, 3.000000e+00]
  %ch6 = tfrt_dht.print_tensor %t, %ch5
  %c = "nn.concat"(%a, %sum) {axis = 0 : i64} : (!tfrt_tensor.tensor, !tfrt_tensor.tensor) -> !tfrt_tensor.tensor
  // CHECK-NEXT: shape = [3, 3], values = [1.000000e+00, 2.000000e+00, 3.000000e+00, 1.100000e+01,
  %ch7 = tfrt_dht.print_tensor %c, %ch6
  %f = "nn.reshape"(%c) {shape = [0, -1, 1]} : (!tfrt_tensor.tensor) -> !tfrt_tensor.tensor
  // CHECK-NEXT: shape = [3, 3, 1]
  %ch8 = "tfrt_dht.print_tensor_shape"(%f, %ch7) : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  tfrt.return
}

// Shapes that do not fit are errors naming the kernel and the shapes, at the kernel's location.
// CHECK-LABEL: --- Running 'matrices_that_do_not_multiply'
func.func @matrices_that_do_not_multiply() -> !tfrt_tensor.tensor {
  %a = tfrt_dht.create_uninitialized_tensor.f32.2 [2 : i64, 3 : i64]
  // expected-error @+1 {{runtime error: nn.gemm.f32: A [2, 3] (transA false) and B [2, 3] (transB false) do not multiply}}
  %y = "nn.gemm.f32"(%a, %a) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor) -> !tfrt_tensor.tensor
  tfrt.return %y : !tfrt_tensor.tensor
}
// CHECK: 'matrices_that_do_not_multiply' returned <<error: nn.gemm.f32: A [2, 3] (transA false) and B [2, 3] (transB false) do not multiply>>

// CHECK-LABEL: --- Running 'shapes_that_do_not_broadcast'
func.func @shapes_that_do_not_broadcast() -> !tfrt_tensor.tensor {
  %a = tfrt_dht.create_uninitialized_tensor.f32.2 [2 : i64, 3 : i64]
  %t = "nn.transpose"(%a) : (!tfrt_tensor.tensor) -> !tfrt_tensor.tensor
  // expected-error @+1 {{runtime error: nn.add.f32: cannot broadcast [2, 3] with [3, 2]}}
  %y = "nn.add.f32"(%a, %t) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor) -> !tfrt_tensor.tensor
  tfrt.return %y : !tfrt_tensor.tensor
}
// CHECK: 'shapes_that_do_not_broadcast' returned <<error: nn.add.f32: cannot broadcast [2, 3] with [3, 2]>>

// CHECK-LABEL: --- Running 'a_filter_for_other_channels'
func.func @a_filter_for_other_channels() -> !tfrt_tensor.tensor {
  %x = tfrt_dht.create_uninitialized_tensor.f32.4 [1 : i64, 3 : i64, 5 : i64, 5 : i64]
  %w = tfrt_dht.create_uninitialized_tensor.f32.4 [4 : i64, 2 : i64, 3 : i64, 3 : i64]
  // expected-error @+1 {{runtime error: nn.conv2d.f32: X [1, 3, 5, 5] and W [4, 2, 3, 3] do not convolve in 1 groups}}
  %y = "nn.conv2d.f32"(%x, %w) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor) -> !tfrt_tensor.tensor
  tfrt.return %y : !tfrt_tensor.tensor
}
// CHECK: 'a_filter_for_other_channels' returned <<error: nn.conv2d.f32: X [1, 3, 5, 5] and W [4, 2, 3, 3] do not convolve in 1 groups>>

// CHECK-LABEL: --- Running 'a_residual_of_another_shape'
func.func @a_residual_of_another_shape() -> !tfrt_tensor.tensor {
  %x = tfrt_dht.create_uninitialized_tensor.f32.4 [1 : i64, 1 : i64, 3 : i64, 3 : i64]
  %w = tfrt_dht.create_uninitialized_tensor.f32.4 [1 : i64, 1 : i64, 2 : i64, 2 : i64]
  %b = tfrt_dht.create_uninitialized_tensor.f32.1 [1 : i64]
  // expected-error @+1 {{runtime error: nn.conv2d.f32: Z [1, 1, 3, 3] is not the result's [1, 1, 2, 2]}}
  %y = "nn.conv2d.f32"(%x, %w, %b, %x) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt_tensor.tensor) -> !tfrt_tensor.tensor
  tfrt.return %y : !tfrt_tensor.tensor
}
// CHECK: 'a_residual_of_another_shape' returned <<error: nn.conv2d.f32: Z [1, 1, 3, 3] is not the result's [1, 1, 2, 2]>>

// CHECK-LABEL: --- Running 'an_unknown_activation'
func.func @an_unknown_activation() -> !tfrt_tensor.tensor {
  %x = tfrt_dht.create_uninitialized_tensor.f32.4 [1 : i64, 1 : i64, 3 : i64, 3 : i64]
  %w = tfrt_dht.create_uninitialized_tensor.f32.4 [1 : i64, 1 : i64, 2 : i64, 2 : i64]
  // expected-error @+1 {{runtime error: nn.conv2d.f32: activation `mish` is none of relu, leaky_relu, clip, sigmoid, swish, gelu and gelu_tanh}}
  %y = "nn.conv2d.f32"(%x, %w) {activation = "mish"} : (!tfrt_tensor.tensor, !tfrt_tensor.tensor) -> !tfrt_tensor.tensor
  tfrt.return %y : !tfrt_tensor.tensor
}
// CHECK: 'an_unknown_activation' returned <<error: nn.conv2d.f32: activation `mish` is none of relu, leaky_relu, clip, sigmoid, swish, gelu and gelu_tanh>>

// CHECK-LABEL: --- Running 'a_scale_for_another_length'
func.func @a_scale_for_another_length() -> !tfrt_tensor.tensor {
  %x = tfrt_dht.create_uninitialized_tensor.f32.2 [2 : i64, 3 : i64]
  %s = tfrt_dht.create_uninitialized_tensor.f32.1 [2 : i64]
  // expected-error @+1 {{runtime error: nn.layer_norm.f32: Scale [2] does not hold the 3 elements that X [2, 3] normalizes}}
  %y = "nn.layer_norm.f32"(%x, %s) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor) -> !tfrt_tensor.tensor
  tfrt.return %y : !tfrt_tensor.tensor
}
// CHECK: 'a_scale_for_another_length' returned <<error: nn.layer_norm.f32: Scale [2] does not hold the 3 elements that X [2, 3] normalizes>>

// CHECK-LABEL: --- Running 'an_unknown_gelu_form'
func.func @an_unknown_gelu_form() -> !tfrt_tensor.tensor {
  %x = tfrt_dht.create_uninitialized_tensor.f32.2 [2 : i64, 3 : i64]
  // expected-error @+1 {{runtime error: nn.gelu.f32: approximate `erf` is neither none nor tanh}}
  %y = "nn.gelu.f32"(%x) {approximate = "erf"} : (!tfrt_tensor.tensor) -> !tfrt_tensor.tensor
  tfrt.return %y : !tfrt_tensor.tensor
}
// CHECK: 'an_unknown_gelu_form' returned <<error: nn.gelu.f32: approximate `erf` is neither none nor tanh>>

// A dense attribute as a tensor, over the file's own bytes: read-only, so a kernel that would
// write into it fails.
// CHECK-LABEL: --- Running 'constant_weights'
func.func @constant_weights() -> !tfrt.chain {
  %ch0 = tfrt.new.chain
  %w = "nn.constant"() {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : () -> !tfrt_tensor.tensor
  // CHECK-NEXT: shape = [2, 2], values = [1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]
  %ch1 = tfrt_dht.print_tensor %w, %ch0
  // expected-error @+1 {{runtime error: the buffer is read-only: it holds a constant of the program}}
  %ch2 = tfrt_dht.fill_tensor_with_constant.f32 %w, %ch1 0.0 : f32
  tfrt.return %ch2 : !tfrt.chain
}
// CHECK: 'constant_weights' returned <<error: the buffer is read-only: it holds a constant of the program>>

// A graph's check of its input: any size where the shape says -1, the others exactly; the
// tensor passes on unchanged (the same buffer).
// CHECK-LABEL: --- Running 'expected_shapes'
func.func @expected_shapes() -> !tfrt.chain {
  %ch0 = tfrt.new.chain
  %x = "nn.constant"() {value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>} : () -> !tfrt_tensor.tensor
  %y = "nn.expect_shape"(%x) {shape = [-1, 3], input = "x"} : (!tfrt_tensor.tensor) -> !tfrt_tensor.tensor
  // CHECK-NEXT: shape = [2, 3], values = [1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00]
  %ch1 = tfrt_dht.print_tensor %y, %ch0
  // expected-error @+1 {{runtime error: nn.expect_shape: input `x` has shape [2, 3], but the graph takes [2, 4]}}
  %z = "nn.expect_shape"(%x) {shape = [2, 4], input = "x"} : (!tfrt_tensor.tensor) -> !tfrt_tensor.tensor
  %ch2 = tfrt_dht.print_tensor %z, %ch1
  tfrt.return %ch2 : !tfrt.chain
}
// CHECK: 'expected_shapes' returned <<error: nn.expect_shape: input `x` has shape [2, 3], but the graph takes [2, 4]>>
