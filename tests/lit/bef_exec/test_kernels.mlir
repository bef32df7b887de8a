// RUN: rtx bef-exec %s.bef | FileCheck %s

// TFRT's test kernels: asynchronous results, atomics, strings, errors, native functions and
// tensor types by name.

// CHECK-LABEL: --- Running 'async_results'
func.func @async_results() -> i32 {
  %a = "tfrt_test.async_constant.i32"() {value = 20 : i32} : () -> i32
  %b = "tfrt_test.async_copy.i32"(%a) : (i32) -> i32
  %c = "tfrt_test.async_copy_2.i32"(%b) : (i32) -> i32
  %sum = "tfrt_test.async_add.i32"(%a, %c) : (i32, i32) -> i32
  %r = tfrt_test.do.async %sum : (i32) -> (i32) {
    %one = tfrt.constant.i32 1
    %x = tfrt.add.i32 %sum, %one
    tfrt.return %x : i32
  }
  // CHECK-NEXT: 'async_results' returned 41
  tfrt.return %r : i32
}

// CHECK-LABEL: --- Running 'atomics'
func.func @atomics() -> i32 {
  %counter = "tfrt_test.atomic.create.i32"() : () -> !test.atomic.i32
  %ch0 = "tfrt_test.atomic.inc.i32"(%counter) : (!test.atomic.i32) -> !tfrt.chain
  %five = tfrt.constant.i32 5
  %ch1 = "tfrt_test.atomic.add.i32"(%counter, %five, %ch0) : (!test.atomic.i32, i32, !tfrt.chain) -> !tfrt.chain
  %value, %ch2 = "tfrt_test.atomic.get.i32"(%counter, %ch1) : (!test.atomic.i32, !tfrt.chain) -> (i32, !tfrt.chain)
  // CHECK-NEXT: 'atomics' returned 6
  tfrt.return %value : i32
}

// CHECK-LABEL: --- Running 'strings'
func.func @strings() -> (i1, !tfrt.chain) {
  %ch0 = tfrt.new.chain
  %a = "tfrt_test.get_string"() {value = "moo"} : () -> !tfrt.string
  %b = "tfrt_test.get_string"() {value = "se"} : () -> !tfrt.string
  %ab = "tfrt_test.append_string"(%a, %b) : (!tfrt.string, !tfrt.string) -> !tfrt.string
  // CHECK-NEXT: string = moose
  %ch1 = "tfrt_test.print_string"(%ab, %ch0) : (!tfrt.string, !tfrt.chain) -> !tfrt.chain
  %format = "tfrt_test.get_string"() {value = "part-%03d.txt"} : () -> !tfrt.string
  %seven = tfrt.constant.i32 7
  %name = "tfrt_test.format_string"(%format, %seven) : (!tfrt.string, i32) -> !tfrt.string
  // CHECK-NEXT: string = part-007.txt
  %ch2 = "tfrt_test.print_string"(%name, %ch1) : (!tfrt.string, !tfrt.chain) -> !tfrt.chain
  %same = "tfrt_test.string_equal"(%ab, %ab) : (!tfrt.string, !tfrt.string) -> i1
  // CHECK-NEXT: 'strings' returned 1,!tfrt.chain value
  tfrt.return %same, %ch2 : i1, !tfrt.chain
}

// CHECK-LABEL: --- Running 'errors'
func.func @errors() -> (i32, i32, i32) {
  // expected-error @+1 {{runtime error: something bad happened}}
  %one, %failed = "tfrt_test.partial_fail"() : () -> (i32, i32)
  %zero = tfrt.constant.i32 0
  %late = "tfrt_test.report_error_concrete_async"(%zero) : (i32) -> i32
  // CHECK-NEXT: 'errors' returned 1,<<error: something bad happened>>,0
  tfrt.return %one, %failed, %late : i32, i32, i32
}

func.func private @native_add(i32, i32) -> i32 attributes {tfrt.native}

// CHECK-LABEL: --- Running 'native'
func.func @native() -> i32 {
  %a = tfrt.constant.i32 2
  %b = tfrt.constant.i32 3
  %c = tfrt.call @native_add(%a, %b) : (i32, i32) -> i32
  // CHECK-NEXT: 'native' returned 5
  tfrt.return %c : i32
}

// CHECK-LABEL: --- Running 'tutorial'
func.func @tutorial() -> !tfrt.chain {
  %ch0 = tfrt.new.chain
  %x = tfrt.constant.i32 3
  %y = tfrt.constant.i32 -4
  %point = "tfrt_tutorial.create_coordinate"(%x, %y) : (i32, i32) -> !tfrt_tutorial.coordinate
  // CHECK-NEXT: (3, -4)
  %ch1 = "tfrt_tutorial.print_coordinate"(%point, %ch0) : (!tfrt_tutorial.coordinate, !tfrt.chain) -> !tfrt.chain
  tfrt.return %ch1 : !tfrt.chain
}

// CHECK-LABEL: --- Running 'tensor_types'
func.func @tensor_types() -> !tfrt.chain {
  %dense = "tfrt_test.get_static_tensor_type"() {tensor_type = "DenseHost"} : () -> !tfrt.tensor_type
  // CHECK-NEXT: tensor_type = DenseHost
  %ch0 = "tfrt_test.print_tensor_type"(%dense) : (!tfrt.tensor_type) -> !tfrt.chain
  %other = "tfrt_test.get_static_tensor_type"() {tensor_type = "NoSuchTensor"} : () -> !tfrt.tensor_type
  // CHECK-NEXT: tensor_type = Unknown
  %ch1 = "tfrt_test.print_tensor_type"(%other, %ch0) : (!tfrt.tensor_type, !tfrt.chain) -> !tfrt.chain
  tfrt.return %ch1 : !tfrt.chain
}
