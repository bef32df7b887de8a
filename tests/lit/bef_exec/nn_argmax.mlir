// RUN: rtx bef-exec %s.bef 2>&1 | FileCheck %s

// `nn.argmax.f32` on [[1, 5, 5], [7, 2, 7]], its indices worked out by hand.
// CHECK-LABEL: --- Running 'argmax'
func.func @argmax() {
  %ch0 = tfrt.new.chain
  %x = tfrt_dht.create_uninitialized_tensor.f32.2 [2 : i64, 3 : i64]
  %ch1 = tfrt_dht.set_tensor_with_constant_values.f32 %x, %ch0 [1.0 : f32, 5.0 : f32, 5.0 : f32, 7.0 : f32, 2.0 : f32, 7.0 : f32]
  // Along rows, the first of equal maxima, the axis kept as 1.
  %a = "nn.argmax.f32"(%x, %ch1) {axis = 1 : i64} : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt_tensor.tensor
  // CHECK-NEXT: DenseHostTensor dtype = i64, shape = [2, 1], values = [1, 0]
  %ch2 = tfrt_dht.print_tensor %a, %ch1
  // The last of equal maxima, the axis dropped.
  %b = "nn.argmax.f32"(%x, %ch1) {axis = -1 : i64, keepdims = 0 : i64, select_last_index = 1 : i64} : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt_tensor.tensor
  // CHECK-NEXT: DenseHostTensor dtype = i64, shape = [2], values = [2, 2]
  %ch3 = tfrt_dht.print_tensor %b, %ch2
  // Down columns (the default axis 0).
  %c = "nn.argmax.f32"(%x, %ch1) : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt_tensor.tensor
  // CHECK-NEXT: DenseHostTensor dtype = i64, shape = [1, 3], values = [1, 0, 1]
  %ch4 = tfrt_dht.print_tensor %c, %ch3
  // expected-error @+1 {{runtime error: nn.argmax.f32: axis 2 is outside a tensor of rank 2}}
  %d = "nn.argmax.f32"(%x, %ch1) {axis = 2 : i64} : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt_tensor.tensor
  tfrt.return
}
