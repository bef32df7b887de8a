// Core Runtime: ops run by name through op handlers on tensor handles, from BEF.
// RUN: rtx bef-exec --test_init_function=handlers %s.bef | FileCheck %s
// RUN: rtx bef-exec --work_queue_type=mstd:2 --test_init_function=handlers %s.bef | FileCheck %s --check-prefix=MSTD

func.func @handlers() {
  %null = "corert.create_null_op_handler"() : () -> !corert.ophandler
  %cpu = "corert.create_cpu_op_handler"(%null) : (!corert.ophandler) -> !corert.ophandler
  corert.register_op_handler %cpu "cpu"
  // A second registration under a taken name keeps the first handler.
  corert.register_op_handler %null "cpu"
  tfrt.return
}

// CHECK-LABEL: --- Running 'elementwise_and_reductions'
// MSTD-LABEL: --- Running 'elementwise_and_reductions'
func.func @elementwise_and_reductions() -> !tfrt.chain {
  %ch0 = tfrt.new.chain
  %cpu = corert.get_op_handler %ch0 "cpu"
  %x = corert.executeop(%cpu)
    "tfrt_test.create_dense_tensor"() { shape = [2, 3], values = [3 : i32, -1 : i32, 7 : i32, 7 : i32, 2 : i32, 9 : i32] } : 1
  %sum = corert.executeop(%cpu) "tfrt_test.add"(%x, %x) : 1
  // CHECK-NEXT: DenseHostTensor dtype = i32, shape = [2, 3], values = [6, -2, 14, 14, 4, 18]
  // MSTD-NEXT: DenseHostTensor dtype = i32, shape = [2, 3], values = [6, -2, 14, 14, 4, 18]
  %ch1 = "corert.print_tensorhandle"(%sum, %ch0) : (!corert.tensorhandle, !tfrt.chain) -> !tfrt.chain
  // Rows: the largest of [3, -1, 7] is at 2, of [7, 2, 9] at 2; columns: 3 < 7, -1 < 2, 7 < 9.
  %rows = corert.executeop(%cpu) "tfrt_test.argmax"(%x) { axis = 1 : i32 } : 1
  // CHECK-NEXT: DenseHostTensor dtype = i32, shape = [2], values = [2, 2]
  %ch2 = "corert.print_tensorhandle"(%rows, %ch1) : (!corert.tensorhandle, !tfrt.chain) -> !tfrt.chain
  %columns = corert.executeop(%cpu) "tfrt_test.argmax"(%x) { axis = 0 : i32 } : 1
  // CHECK-NEXT: DenseHostTensor dtype = i32, shape = [3], values = [1, 1, 1]
  %ch3 = "corert.print_tensorhandle"(%columns, %ch2) : (!corert.tensorhandle, !tfrt.chain) -> !tfrt.chain
  // Integer means truncate: (3 + 7) / 2 = 5, (-1 + 2) / 2 = 0, (7 + 9) / 2 = 8.
  %mean = corert.executeop(%cpu) "tfrt_test.reduce_mean"(%x) { axis = 0 : i32 } : 1
  // CHECK-NEXT: DenseHostTensor dtype = i32, shape = [3], values = [5, 0, 8]
  %ch4 = "corert.print_tensorhandle"(%mean, %ch3) : (!corert.tensorhandle, !tfrt.chain) -> !tfrt.chain
  %same = corert.executeop(%cpu) "tfrt_test.equal"(%x, %sum) : 1
  // CHECK-NEXT: DenseHostTensor dtype = i32, shape = [2, 3], values = [0, 0, 0, 0, 0, 0]
  %ch5 = "corert.print_tensorhandle"(%same, %ch4) : (!corert.tensorhandle, !tfrt.chain) -> !tfrt.chain
  %shape = "corert.tensorhandle_to_shape"(%mean, %ch5) : (!corert.tensorhandle, !tfrt.chain) -> !ts.shape
  // CHECK-NEXT: shape = [3]
  %ch6 = "ts.print_shape"(%shape, %ch5) : (!ts.shape, !tfrt.chain) -> !tfrt.chain
  tfrt.return %ch6 : !tfrt.chain
}
// CHECK-NEXT: 'elementwise_and_reductions' returned !tfrt.chain value

// CHECK-LABEL: --- Running 'splat_scalar_and_casts'
func.func @splat_scalar_and_casts() -> !tfrt.chain {
  %ch0 = tfrt.new.chain
  %cpu = corert.get_op_handler %ch0 "cpu"
  // One value fills the shape.
  %f = corert.executeop(%cpu)
    "tfrt_test.create_dense_tensor"() { shape = [2, 2], values = [-2.5 : f32] } : 1
  %relu = corert.executeop(%cpu) "tfrt_test.relu"(%f) : 1
  // CHECK-NEXT: DenseHostTensor dtype = f32, shape = [2, 2], values = [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]
  %ch1 = "corert.print_tensorhandle"(%relu, %ch0) : (!corert.tensorhandle, !tfrt.chain) -> !tfrt.chain
  // -2.5 in half precision is 0xC100 = 49408; relu of it is +0.
  %half = corert.executeop(%cpu) "tfrt_test.cast"(%f) { type = "f16" } : 1
  // CHECK-NEXT: DenseHostTensor dtype = f16, shape = [2, 2], values = [fp16(49408), fp16(49408), fp16(49408), fp16(49408)]
  %ch2 = "corert.print_tensorhandle"(%half, %ch1) : (!corert.tensorhandle, !tfrt.chain) -> !tfrt.chain
  %back = corert.executeop(%cpu) "tfrt_test.cast"(%half) { type = "f32" } : 1
  // CHECK-NEXT: values = [-2.500000e+00, -2.500000e+00, -2.500000e+00, -2.500000e+00]
  %ch3 = "corert.print_tensorhandle"(%back, %ch2) : (!corert.tensorhandle, !tfrt.chain) -> !tfrt.chain
  // A scalar tensor stays one value; adding two keeps it one; printing it through the op shows it.
  %s = corert.executeop(%cpu) "tfrt_test.create_from_scalar"() { shape = [3: i64], value = 20: i64 } : 1
  %s2 = corert.executeop(%cpu) "tfrt_test.add"(%s, %s) : 1
  // CHECK-NEXT: ScalarHostTensor dtype = i64, shape = [3], value = 40
  %ch4 = corert.executeop.seq(%cpu, %ch3) "tfrt_test.print"(%s2) : 0
  // An op that takes dense tensors gets the scalar written out.
  %eq = corert.executeop(%cpu) "tfrt_test.equal"(%s2, %s2) : 1
  // CHECK-NEXT: DenseHostTensor dtype = i64, shape = [3], values = [1, 1, 1]
  %ch5 = "corert.print_tensorhandle"(%eq, %ch4) : (!corert.tensorhandle, !tfrt.chain) -> !tfrt.chain
  tfrt.return %ch5 : !tfrt.chain
}

// Results made later (on the work queue), with and without their metadata up front.
// CHECK-LABEL: --- Running 'async_results'
func.func @async_results() -> !tfrt.chain {
  %ch0 = tfrt.new.chain
  %cpu = corert.get_op_handler %ch0 "cpu"
  %a = corert.executeop(%cpu)
    "tfrt_test.create_dense_tensor"() { shape = [5], values = [1 : i32, 4 : i32, 9 : i32, 16 : i32, 25 : i32] } : 1
  %b = corert.executeop(%cpu) "tfrt_test.async.noop_no_md"(%a) : 1
  %odd = corert.executeop(%cpu) "tfrt_test.odd_collector"(%b) : 1
  // CHECK-NEXT: DenseHostTensor dtype = i32, shape = [3], values = [1, 9, 25]
  %ch1 = "corert.print_tensorhandle"(%odd, %ch0) : (!corert.tensorhandle, !tfrt.chain) -> !tfrt.chain
  %c = corert.executeop(%cpu) "tfrt_test.async.noop"(%odd) : 1
  %shape = "corert.tensorhandle_to_shape"(%c, %ch1) : (!corert.tensorhandle, !tfrt.chain) -> !ts.shape
  // CHECK-NEXT: shape = [3]
  %ch2 = "ts.print_shape"(%shape, %ch1) : (!ts.shape, !tfrt.chain) -> !tfrt.chain
  tfrt.return %ch2 : !tfrt.chain
}

// Ops with side effects run in their chain's order, whatever order their inputs come in.
// CHECK-LABEL: --- Running 'sequenced_prints'
func.func @sequenced_prints() -> !tfrt.chain {
  %ch0 = tfrt.new.chain
  %cpu = corert.get_op_handler %ch0 "cpu"
  %a = corert.executeop(%cpu) "tfrt_test.create_from_scalar"() { shape = [1: i64], value = 1: i32 } : 1
  %b = corert.executeop(%cpu) "tfrt_test.async.noop"(%a) : 1
  %c = corert.executeop(%cpu) "tfrt_test.async.noop"(%b) : 1
  // CHECK-NEXT: value = 1
  // CHECK-NEXT: value = 1
  // CHECK-NEXT: StringHostTensor shape = [1, 2], values = ["left", "right"]
  %ch1 = corert.executeop.seq(%cpu, %ch0) "tfrt_test.print"(%c) : 0
  %ch2 = corert.executeop.seq(%cpu, %ch1) "tfrt_test.print"(%a) : 0
  %s = corert.const_string_tensor {shape = [1, 2], value = ["left", "right"]}
  %ch3 = corert.executeop.seq(%cpu, %ch2) "tfrt_test.print"(%s) : 0
  tfrt.return %ch3 : !tfrt.chain
}

// CHECK-LABEL: --- Running 'errors_name_the_op'
func.func @errors_name_the_op() -> !tfrt.chain {
  %ch0 = tfrt.new.chain
  %cpu = corert.get_op_handler %ch0 "cpu"
  // expected-error @+1 {{tfrt_test.no_such_op was not supported by NullOpHandler.}}
  %missing = corert.executeop(%cpu) "tfrt_test.no_such_op"() : 1
  %a = corert.executeop(%cpu) "tfrt_test.create_dense_tensor"() { shape = [2], values = [1 : i32, 2 : i32] } : 1
  %b = corert.executeop(%cpu) "tfrt_test.create_dense_tensor"() { shape = [3], values = [1 : i32] } : 1
  // expected-error @+1 {{arguments of test.add must have same shape}}
  %bad = corert.executeop(%cpu) "tfrt_test.add"(%a, %b) : 1
  // Errors pass on without another report: this op does not run.
  %worse = corert.executeop(%cpu) "tfrt_test.add"(%bad, %bad) : 1
  // expected-error @+1 {{missing 'axis' attribute}}
  %noaxis = corert.executeop(%cpu) "tfrt_test.argmax"(%a) { axis = 1 } : 1
  %s = corert.const_string_tensor {shape = [1], value = ["x"]}
  // expected-error @+1 {{Cannot implicitly convert StringHost to DenseHost}}
  %strings = corert.executeop(%cpu) "tfrt_test.relu"(%s) : 1
  // expected-error @+1 {{op_handler not found: gpu}}
  %gpu = corert.get_op_handler %ch0 "gpu"
  %ch1 = "corert.print_tensorhandle"(%worse, %ch0) : (!corert.tensorhandle, !tfrt.chain) -> !tfrt.chain
  tfrt.return %ch1 : !tfrt.chain
}
// CHECK-NEXT: 'errors_name_the_op' returned <<error: arguments of test.add must have same shape>>

func.func @first(%ch: !tfrt.chain, %x: !corert.tensorhandle, %y: !corert.tensorhandle) -> (!tfrt.chain, !corert.tensorhandle) {
  tfrt.return %ch, %x : !tfrt.chain, !corert.tensorhandle
}

func.func @second(%ch: !tfrt.chain, %x: !corert.tensorhandle, %y: !corert.tensorhandle) -> (!tfrt.chain, !corert.tensorhandle) {
  tfrt.return %ch, %y : !tfrt.chain, !corert.tensorhandle
}

// CHECK-LABEL: --- Running 'cond_on_a_tensor'
func.func @cond_on_a_tensor() -> !tfrt.chain {
  %ch0 = tfrt.new.chain
  %cpu = corert.get_op_handler %ch0 "cpu"
  %x = corert.const_dense_tensor dense<[10, 20]> : tensor<2xi64>
  %y = corert.const_dense_tensor dense<[30, 40]> : tensor<2xi64>
  // Only the first element counts: [0, 5] is false.
  %no = corert.const_dense_tensor dense<[0, 5]> : tensor<2xi32>
  %pending = corert.executeop(%cpu) "tfrt_test.async.noop_no_md"(%no) : 1
  %r:2 = corert.cond %pending @first @second (%ch0, %x, %y) : (!corert.tensorhandle, !corert.tensorhandle) -> (!corert.tensorhandle)
  // CHECK-NEXT: DenseHostTensor dtype = i64, shape = [2], values = [30, 40]
  %ch1 = "corert.print_tensorhandle"(%r#1, %r#0) : (!corert.tensorhandle, !tfrt.chain) -> !tfrt.chain
  %yes = corert.create_dense_tensor.i1 {shape = [], value = [true]}
  %s:2 = corert.cond %yes @first @second (%ch1, %x, %y) : (!corert.tensorhandle, !corert.tensorhandle) -> (!corert.tensorhandle)
  // CHECK-NEXT: DenseHostTensor dtype = i64, shape = [2], values = [10, 20]
  %ch2 = "corert.print_tensorhandle"(%s#1, %s#0) : (!corert.tensorhandle, !tfrt.chain) -> !tfrt.chain
  %f = corert.const_dense_tensor dense<1.0> : tensor<f32>
  // expected-error @+1 {{a condition must hold a boolean or an integer, not f32}}
  %t:2 = corert.cond %f @first @second (%ch2, %x, %y) : (!corert.tensorhandle, !corert.tensorhandle) -> (!corert.tensorhandle)
  tfrt.return %ch2 : !tfrt.chain
}

// Goes on while x + 100 is not 200.
func.func @below_100(%ch: !tfrt.chain, %x: !corert.tensorhandle) -> (!tfrt.chain, !corert.tensorhandle) {
  %cpu = corert.get_op_handler %ch "cpu"
  %hundred = corert.create_dense_tensor.i32 {shape = [1], value = [100 : i32]}
  %shifted = corert.executeop(%cpu) "tfrt_test.add"(%x, %hundred) : 1
  %limit = corert.create_dense_tensor.i32 {shape = [1], value = [200 : i32]}
  %stop = corert.executeop(%cpu) "tfrt_test.equal"(%shifted, %limit) : 1
  %zero = corert.create_dense_tensor.i32 {shape = [1], value = [0 : i32]}
  %go = corert.executeop(%cpu) "tfrt_test.equal"(%stop, %zero) : 1
  tfrt.return %ch, %go : !tfrt.chain, !corert.tensorhandle
}

func.func @double(%ch: !tfrt.chain, %x: !corert.tensorhandle) -> (!tfrt.chain, !corert.tensorhandle) {
  %cpu = corert.get_op_handler %ch "cpu"
  %y = corert.executeop(%cpu) "tfrt_test.add"(%x, %x) : 1
  %ch1 = corert.executeop.seq(%cpu, %ch) "tfrt_test.print"(%y) : 0
  tfrt.return %ch1, %y : !tfrt.chain, !corert.tensorhandle
}

// 25 doubles to 50, then 100, where x + 100 = 200 stops the loop.
// CHECK-LABEL: --- Running 'while_on_a_tensor'
func.func @while_on_a_tensor() -> !tfrt.chain {
  %ch0 = tfrt.new.chain
  %x = corert.create_dense_tensor.i32 {shape = [1], value = [25 : i32]}
  // CHECK-NEXT: DenseHostTensor dtype = i32, shape = [1], values = [50]
  // CHECK-NEXT: DenseHostTensor dtype = i32, shape = [1], values = [100]
  // CHECK-NEXT: 'while_on_a_tensor' returned !tfrt.chain value
  %ch1, %r = corert.while @below_100 @double (%ch0, %x) : (!corert.tensorhandle) -> (!corert.tensorhandle)
  tfrt.return %ch1 : !tfrt.chain
}

func.func @scaled(%ch: !tfrt.chain, %x: !corert.tensorhandle) -> (!tfrt.chain, !corert.tensorhandle) {
  %cpu = corert.get_op_handler %ch "cpu"
  %late = corert.executeop(%cpu) "tfrt_test.async.noop"(%x) : 1
  %y = corert.executeop(%cpu) "tfrt_test.add"(%late, %x) : 1
  tfrt.return %ch, %y : !tfrt.chain, !corert.tensorhandle
}

// A BEF function run as an op.
// CHECK-LABEL: --- Running 'composite'
func.func @composite() -> !tfrt.chain {
  %ch0 = tfrt.new.chain
  %x = corert.create_dense_tensor.i64 {shape = [2], value = [3, -4]}
  %op = "corert.make_composite_op"() {fn = @scaled} : () -> !corert.op
  %y = "corert.execute_crt_op"(%op, %x) {op_attrs = [], op_func_attrs = []} : (!corert.op, !corert.tensorhandle) -> !corert.tensorhandle
  // CHECK-NEXT: DenseHostTensor dtype = i64, shape = [2], values = [6, -8]
  %ch1 = "corert.print_tensorhandle"(%y, %ch0) : (!corert.tensorhandle, !tfrt.chain) -> !tfrt.chain
  %ht = "corert.tensorhandle_to_ht"(%y, %ch1) : (!corert.tensorhandle, !tfrt.chain) -> !t.tensor
  // CHECK-NEXT: DenseHostTensor dtype = i64, shape = [2], values = [6, -8]
  %ch2 = "tfrt_dht.print_tensor"(%ht, %ch1) : (!t.tensor, !tfrt.chain) -> !tfrt.chain
  // CHECK-NEXT: 'composite' returned !tfrt.chain value
  tfrt.return %ch2 : !tfrt.chain
}

// CHECK-LABEL: --- Running 'case_on_a_tensor'
func.func @case_on_a_tensor() -> i32 {
  %index = corert.create_dense_tensor.i32 {shape = [1], value = [7 : i32]}
  %i = corert.tensorhandle_to_int32 %index
  // CHECK-NEXT: 'case_on_a_tensor' returned 7
  tfrt.return %i : i32
}

// A context's cpu handler runs every kernel of the context as an op: ONNX's Transpose here.
// CHECK-LABEL: --- Running 'kernels_as_ops'
func.func @kernels_as_ops() -> !tfrt.chain {
  %ch0 = tfrt.new.chain
  %cpu = corert.get_op_handler %ch0 "cpu"
  %x = corert.const_dense_tensor dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %y = corert.executeop(%cpu) "onnx.Transpose"(%x) {perm = [1, 0]} : 1
  // CHECK-NEXT: DenseHostTensor dtype = i64, shape = [3, 2], values = [1, 4, 2, 5, 3, 6]
  %ch1 = "corert.print_tensorhandle"(%y, %ch0) : (!corert.tensorhandle, !tfrt.chain) -> !tfrt.chain
  tfrt.return %ch1 : !tfrt.chain
}
