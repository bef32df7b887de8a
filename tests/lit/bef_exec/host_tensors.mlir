// RUN: rtx bef-exec %s.bef | FileCheck %s

// Dense, string and sparse host tensors, printed as TFRT prints them.

// CHECK-LABEL: --- Running 'dense'
func.func @dense() -> i1 {
  %ch0 = tfrt.new.chain
  %a = tfrt_dht.create_uninitialized_tensor.i32.2 [2 : i64, 2 : i64]
  %ch1 = tfrt_dht.set_tensor_with_constant_values.i32 %a, %ch0 [1 : i32, -2 : i32, 3 : i32, 0 : i32]
  // CHECK-NEXT: DenseHostTensor dtype = i32, shape = [2, 2], values = [1, -2, 3, 0]
  %ch2 = tfrt_dht.print_tensor %a, %ch1
  %f = tfrt_dht.create_uninitialized_tensor.f32.1 [3 : i64]
  %ch3 = tfrt_dht.fill_tensor_with_constant.f32 %f, %ch2 0.5 : f32
  // CHECK-NEXT: DenseHostTensor dtype = f32, shape = [3], values = [5.000000e-01, 5.000000e-01, 5.000000e-01]
  %ch4 = tfrt_dht.print_tensor %f, %ch3
  %b = tfrt_dht.create_uninitialized_tensor.i32.2 [2 : i64, 2 : i64]
  %ch5 = tfrt_dht.fill_tensor_with_constant.i32 %b, %ch4 0 : i32
  %equal, %ch6 = tfrt_dht.tensor_equal.i32 %a, %b, %ch5
  // CHECK-NEXT: 'dense' returned 0
  tfrt.return %equal : i1
}

// CHECK-LABEL: --- Running 'sparse'
func.func @sparse() -> i1 {
  %ch0 = tfrt.new.chain
  %a = tfrt_dht.create_uninitialized_tensor.i32.2 [2 : i64, 2 : i64]
  %ch1 = tfrt_dht.set_tensor_with_constant_values.i32 %a, %ch0 [0 : i32, 7 : i32, 8 : i32, 0 : i32]
  %coo, %ch2 = coo.convert_dht_to_coo.i32.2 %a, %ch1
  // CHECK-NEXT: CooHostTensor dtype = i32, shape = [2, 2], indices = [0, 1, 1, 0], values = [7, 8]
  %ch3 = tfrt_dht.print_tensor %coo, %ch2
  %back, %ch4 = coo.convert_coo_to_dht.i32.2 %coo, %ch3
  %equal, %ch5 = tfrt_dht.tensor_equal.i32 %a, %back, %ch4
  // CHECK-NEXT: 'sparse' returned 1
  tfrt.return %equal : i1
}

// CHECK-LABEL: --- Running 'strings'
func.func @strings() {
  %ch0 = tfrt.new.chain
  %s = "tfrt_sht.create_tensor"() {shape = [1, 2], values = ["a", "bc"]} : () -> !tfrt_tensor.tensor
  // CHECK-NEXT: StringHostTensor shape = [1, 2], values = ["a", "bc"]
  %ch1 = tfrt_dht.print_tensor %s, %ch0
  tfrt.return
}
