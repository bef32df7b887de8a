// RUN: not rtx bef-exec %s.bef | FileCheck %s --check-prefixes=CHECK,LEAK
// RUN: rtx bef-exec --host_allocator_type=profiled_allocator %s.bef | FileCheck %s --check-prefixes=CHECK,PROFILE
// RUN: rtx bef-exec --host_allocator_type=malloc %s.bef | FileCheck %s --check-prefix=MALLOC

// The counting allocators: the leak check (the default) fails a run that leaves host memory
// allocated and prints the counts first; the profile prints them at the end of every run;
// plain malloc counts nothing.

// LEAK: Choosing memory leak check allocator.
// PROFILE: Choosing profiled allocator based on malloc.
// MALLOC: Choosing malloc.

// CHECK-LABEL: --- Running 'a_tensor'
func.func @a_tensor() {
  %ch0 = tfrt.new.chain
  // Four i32s: 16 bytes of data behind a 64-byte header.
  %t = tfrt_dht.create_uninitialized_tensor.i32.1 [4 : i64]
  %ch1 = tfrt_dht.fill_tensor_with_constant.i32 %t, %ch0 3 : i32
  // CHECK-NEXT: DenseHostTensor dtype = i32, shape = [4], values = [3, 3, 3, 3]
  %ch2 = tfrt_dht.print_tensor %t, %ch1
  tfrt.return
}

// CHECK-LABEL: --- Running 'leaks_four_bytes'
func.func @leaks_four_bytes() {
  "tfrt_test.memory_leak_one_int32"() : () -> ()
  tfrt.return
}

// CHECK-NEXT: HostAllocator profile:
// CHECK-NEXT: Current number of allocations = 1
// CHECK-NEXT: Max number of allocations = 1
// CHECK-NEXT: Total number of allocations = 2
// CHECK-NEXT: Current number of bytes allocated = 4
// CHECK-NEXT: Max number of bytes allocated = 80
// LEAK-NEXT: Memory leak detected: 1 alive allocations, 4 alive bytes
// PROFILE-NOT: Memory leak
// MALLOC-NOT: HostAllocator profile
// MALLOC-NOT: Memory leak
