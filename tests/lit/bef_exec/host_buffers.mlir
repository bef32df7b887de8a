// RUN: rtx bef-exec %s.bef 2>&1 | FileCheck %s

// Host buffers: allocated from the host's allocator, a tensor's own, and slices of one. None is a
// copy: tensors made over a buffer or a slice of it see each other's writes.

// CHECK-LABEL: --- Running 'slices_share_their_parent'
func.func @slices_share_their_parent() -> !tfrt.chain {
  %ch0 = tfrt.new.chain
  %size = tfrt.constant.i64 64
  %alignment = tfrt.constant.i64 16
  %buffer = tfrt_dht.allocate_buffer %size, %alignment
  %offset = tfrt.constant.i64 16
  %length = tfrt.constant.i64 8
  %slice = tfrt_dht.get_buffer_slice %buffer, %offset, %length
  // CHECK-NEXT: HostBuffer<pointer=0x[[#%x,BASE:]], size=64>
  %ch1 = tfrt_dht.print_buffer %buffer, %ch0
  // CHECK-NEXT: HostBuffer<pointer=0x[[#%x,BASE+16]], size=8>
  %ch2 = tfrt_dht.print_buffer %slice, %ch1

  %sixteen = ts.build_shape [16 : i64]
  %whole, %ch3 = tfrt_dht.make_tensor.i32 %buffer, %sixteen, %ch2
  %ch4 = tfrt_dht.fill_tensor_with_constant.i32 %whole, %ch3 9 : i32
  %two = ts.build_shape [2 : i64]
  %part, %ch5 = tfrt_dht.make_tensor.i32 %slice, %two, %ch4
  %ch6 = tfrt_dht.set_tensor_with_constant_values.i32 %part, %ch5 [5 : i32, 6 : i32]
  // Bytes 16 to 24 are elements 4 and 5.
  // CHECK-NEXT: DenseHostTensor dtype = i32, shape = [16], values = [9, 9, 9, 9, 5, 6, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9]
  %ch7 = tfrt_dht.print_tensor %whole, %ch6
  tfrt.return %ch7 : !tfrt.chain
}

// CHECK-LABEL: --- Running 'a_tensors_buffer_is_its_own'
func.func @a_tensors_buffer_is_its_own() -> !tfrt.chain {
  %ch0 = tfrt.new.chain
  %t = tfrt_dht.create_uninitialized_tensor.f32.1 [4 : i64]
  %ch1 = tfrt_dht.fill_tensor_with_constant.f32 %t, %ch0 1.0 : f32
  %buffer, %ch2 = tfrt_dht.get_buffer %t, %ch1
  // CHECK-NEXT: HostBuffer<pointer=0x{{[0-9a-f]+}}, size=16>
  %ch3 = tfrt_dht.print_buffer %buffer, %ch2
  %square = ts.build_shape [2 : i64, 2 : i64]
  %view, %ch4 = tfrt_dht.make_tensor.f32 %buffer, %square, %ch3
  %a = tfrt.constant.f32 0.5
  %b = tfrt.constant.f32 -1.5
  %ch5 = "tfrt_dht.set_tensor_with_values.f32"(%view, %ch4, %a, %b, %a, %b)
      : (!tfrt_tensor.tensor, !tfrt.chain, f32, f32, f32, f32) -> !tfrt.chain
  // CHECK-NEXT: DenseHostTensor dtype = f32, shape = [2, 2], values = [5.000000e-01, -1.500000e+00, 5.000000e-01, -1.500000e+00]
  %ch6 = tfrt_dht.print_tensor %view, %ch5
  // CHECK-NEXT: DenseHostTensor dtype = f32, shape = [4], values = [5.000000e-01, -1.500000e+00, 5.000000e-01, -1.500000e+00]
  %ch7 = tfrt_dht.print_tensor %t, %ch6
  tfrt.return %ch7 : !tfrt.chain
}

// CHECK-LABEL: --- Running 'misfits'
func.func @misfits() -> (!tfrt.chain, !tfrt.chain, !tfrt_tensor.tensor) {
  %ch0 = tfrt.new.chain
  %size = tfrt.constant.i64 16
  %eight = tfrt.constant.i64 8
  %three = tfrt.constant.i64 3
  // expected-error @+1 {{runtime error: alignment 3 is not a power of two}}
  %odd = tfrt_dht.allocate_buffer %size, %three
  %buffer = tfrt_dht.allocate_buffer %size, %eight
  %twelve = tfrt.constant.i64 12
  // expected-error @+1 {{runtime error: 12 bytes at offset 8 do not fit in a buffer of 16 bytes}}
  %past_the_end = tfrt_dht.get_buffer_slice %buffer, %eight, %twelve
  %shape = ts.build_shape [3 : i64]
  // expected-error @+1 {{runtime error: dht.make_tensor failed: buffer_size (16) is not equal to the number of elements in shape ([3]) times element size (4)}}
  %t, %ch1 = tfrt_dht.make_tensor.i32 %buffer, %shape, %ch0
  %four = tfrt_dht.create_uninitialized_tensor.i64.1 [4 : i64]
  %x = tfrt.constant.i64 1
  // expected-error @+1 {{runtime error: Incorrect number of values for the tensor: 3, but expected 4}}
  %ch2 = "tfrt_dht.set_tensor_with_values.i64"(%four, %ch0, %x, %x, %x)
      : (!tfrt_tensor.tensor, !tfrt.chain, i64, i64, i64) -> !tfrt.chain
  tfrt.return %ch1, %ch2, %t : !tfrt.chain, !tfrt.chain, !tfrt_tensor.tensor
}
// CHECK-NEXT: 'misfits' returned <<error: dht.make_tensor failed: buffer_size (16) is not equal to the number of elements in shape ([3]) times element size (4)>>,<<error: Incorrect number of values for the tensor: 3, but expected 4>>,<<error: dht.make_tensor failed: buffer_size (16) is not equal to the number of elements in shape ([3]) times element size (4)>>
