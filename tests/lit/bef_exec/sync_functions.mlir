// RUN: rtx bef-exec %s.bef 2>&1 | FileCheck %s

// Kernels that run a sync function to completion, in the caller's request or in one of their
// own, and return its i32 results; the function must take two i32s and return as many results
// as the kernel's name says.

func.func @forty_two(%a: i32, %b: i32) -> i32 attributes {tfrt.sync} {
  %sum = "tfrt_test.sync_sum_attributes"() {a = 40 : i32, b = 2 : i32} : () -> i32
  tfrt.return %sum : i32
}

func.func @pair(%a: i32, %b: i32) -> (i32, i32) attributes {tfrt.sync} {
  %x = "tfrt_test.sync_sum_attributes"() {a = 5 : i32} : () -> i32
  %y = "tfrt_test.sync_sum_attributes"() {a = -7 : i32, b = 1 : i32, c = 1 : i32} : () -> i32
  tfrt.return %x, %y : i32, i32
}

func.func @not_sync(%a: i32, %b: i32) -> i32 {
  tfrt.return %a : i32
}

// CHECK-LABEL: --- Running 'invoked'
func.func @invoked() -> (i32, i32, i32, i32, i32, i32) {
  %one = tfrt.constant.i32 1
  %r = "tfrt_test.invoke_sync_function.i32_i32.i32"(%one, %one) {fn = @forty_two} : (i32, i32) -> i32
  %x, %y = "tfrt_test.invoke_sync_function.i32_i32.i32_i32"(%one, %one) {fn = @pair} : (i32, i32) -> (i32, i32)
  %s = "tfrt_test.sync_function_runner.i32_i32.i32"(%one, %one) {fn = @forty_two} : (i32, i32) -> i32
  %u, %v = "tfrt_test.sync_function_runner.i32_i32.i32_i32"(%one, %one) {fn = @pair} : (i32, i32) -> (i32, i32)
  tfrt.return %r, %x, %y, %s, %u, %v : i32, i32, i32, i32, i32, i32
}
// CHECK-NEXT: 'invoked' returned 42,5,-5,42,5,-5

// CHECK-LABEL: --- Running 'misfits'
func.func @misfits() -> (i32, i32) {
  %one = tfrt.constant.i32 1
  // expected-error @+1 {{runtime error: Invalid signature for function forty_two. Expected 2 arguments and 2 results, but get 2 arguments and 1 results}}
  %x, %y = "tfrt_test.invoke_sync_function.i32_i32.i32_i32"(%one, %one) {fn = @forty_two} : (i32, i32) -> (i32, i32)
  // expected-error @+1 {{runtime error: 'not_sync' is not a sync function; call it with async values}}
  %z = "tfrt_test.sync_function_runner.i32_i32.i32"(%one, %one) {fn = @not_sync} : (i32, i32) -> i32
  tfrt.return %x, %z : i32, i32
}
// CHECK-NEXT: 'misfits' returned <<error: Invalid signature for function forty_two. Expected 2 arguments and 2 results, but get 2 arguments and 1 results>>,<<error: 'not_sync' is not a sync function; call it with async values>>
