// Op attributes as Core Runtime keeps and prints them, and the logging op handler.
// RUN: rtx bef-exec %s.bef 2>&1 | FileCheck %s

// CHECK-LABEL: --- Running 'attributes_print_sorted'
func.func @attributes_print_sorted() -> !tfrt.chain {
  %ch0 = tfrt.new.chain
  %attrs = "corert.create_op_attrs"() : () -> !corert.opattrs
  // CHECK-NEXT: OpAttrs is empty
  %ch1 = "tfrt_test.corert.op_attrs_print"(%attrs, %ch0) : (!corert.opattrs, !tfrt.chain) -> !tfrt.chain
  %ch2 = "corert.op_attrs_set.str"(%attrs, %ch1) {key = "name", value = "relu6"} : (!corert.opattrs, !tfrt.chain) -> !tfrt.chain
  %ch3 = "corert.op_attrs_set_array.i64"(%attrs, %ch2) {key = "dims", value = [7, 8, 9, 10, 11, 12]} : (!corert.opattrs, !tfrt.chain) -> !tfrt.chain
  %ch4 = "corert.op_attrs_set.bool"(%attrs, %ch3) {key = "flag", value = true} : (!corert.opattrs, !tfrt.chain) -> !tfrt.chain
  // A key set twice keeps its first value.
  %ch5 = "corert.op_attrs_set.bool"(%attrs, %ch4) {key = "flag", value = false} : (!corert.opattrs, !tfrt.chain) -> !tfrt.chain
  %ch6 = "corert.op_attrs_set.shape"(%attrs, %ch5) {key = "at", value = #corert.shape<4x?>} : (!corert.opattrs, !tfrt.chain) -> !tfrt.chain
  %ch7 = "corert.op_attrs_set.dtype"(%attrs, %ch6) {key = "kind", value = !corert.qint8} : (!corert.opattrs, !tfrt.chain) -> !tfrt.chain
  %ref, %ch8 = "tfrt_test.corert.op_attrs_freeze"(%attrs, %ch7) : (!corert.opattrs, !tfrt.chain) -> (!corert.opattrs_ref, !tfrt.chain)
  %ch9 = "corert.op_attrs_set.f32"(%attrs, %ch8) {key = "scale", value = -0.5 : f32} : (!corert.opattrs, !tfrt.chain) -> !tfrt.chain
  // The frozen copy keeps the five set before it.
  // CHECK-NEXT: OpAttrs contains 5 entries:
  // CHECK-NEXT:   'at' type=SHAPE value=<4x-1>
  // CHECK-NEXT:   'dims' type=I64 value=[7, 8, 9, 10, 11...]
  // CHECK-NEXT:   'flag' type=BOOL value=1
  // CHECK-NEXT:   'kind' type=DTYPE value=QI8
  // CHECK-NEXT:   'name' type=CHAR value=[r, e, l, u, 6]
  // CHECK-EMPTY:
  %ch10 = "tfrt_test.corert.op_attrs_ref_print"(%ref, %ch9) : (!corert.opattrs_ref, !tfrt.chain) -> !tfrt.chain
  // CHECK-NEXT: OpAttrs contains 6 entries:
  // CHECK:        'scale' type=F32 value=-5.000000e-01
  %ch11 = "tfrt_test.corert.op_attrs_print"(%attrs, %ch10) : (!corert.opattrs, !tfrt.chain) -> !tfrt.chain
  tfrt.return %ch11 : !tfrt.chain
}

func.func @logged(%ch: !tfrt.chain) -> !tfrt.chain {
  %null = "corert.create_null_op_handler"() : () -> !corert.ophandler
  %cpu = "corert.create_cpu_op_handler"(%null) : (!corert.ophandler) -> !corert.ophandler
  %log = "corert.create_logging_op_handler"(%cpu) {sync_log_results = true} : (!corert.ophandler) -> !corert.ophandler
  %ch1 = corert.register_op_handler %log "log"
  tfrt.return %ch1 : !tfrt.chain
}

// CHECK-LABEL: --- Running 'logging_handler'
func.func @logging_handler() -> !tfrt.chain {
  %ch0 = tfrt.new.chain
  %ch1 = tfrt.call @logged(%ch0) : (!tfrt.chain) -> !tfrt.chain
  %log = corert.get_op_handler %ch1 "log"
  // CHECK-NEXT: [0] dispatch 'tfrt_test.create_from_scalar' 0 arguments, 1 result, OpAttrs contains 2 entries:
  // CHECK-NEXT:   'shape' type=I64 value=[2]
  // CHECK-NEXT:   'value' type=I32 value=6
  // CHECK-EMPTY:
  // CHECK-NEXT: Inputs for [0]: 'tfrt_test.create_from_scalar':
  // CHECK-EMPTY:
  // CHECK-NEXT: Outputs for [0]: 'tfrt_test.create_from_scalar':
  // CHECK-NEXT:   Output for [0] tensor 0: DenseHostTensor dtype = i32, shape = [2], values = [6, 6]
  // CHECK-EMPTY:
  %a = corert.executeop(%log) "tfrt_test.create_from_scalar"() {value = 6 : i32, shape = [2]} : 1
  // CHECK-NEXT: [1] dispatch 'tfrt_test.add' 2 arguments, 1 result, no attributes
  // CHECK-NEXT: Inputs for [1]: 'tfrt_test.add':
  // CHECK-NEXT:   Input for [1] tensor 0: DenseHostTensor dtype = i32, shape = [2], values = [6, 6]
  // CHECK-NEXT:   Input for [1] tensor 1: DenseHostTensor dtype = i32, shape = [2], values = [6, 6]
  // CHECK-EMPTY:
  // CHECK-NEXT: Outputs for [1]: 'tfrt_test.add':
  // CHECK-NEXT:   Output for [1] tensor 0: DenseHostTensor dtype = i32, shape = [2], values = [12, 12]
  %b = corert.executeop(%log) "tfrt_test.add"(%a, %a) : 1
  // An op neither handler has is not logged.
  // CHECK-NOT: dispatch 'no.such.op'
  // CHECK: 'logging_handler' returned <<error: no.such.op was not supported by NullOpHandler.>>
  // expected-error @+1 {{no.such.op was not supported by NullOpHandler.}}
  %c = corert.executeop(%log) "no.such.op"(%b) : 1
  %ch2 = "corert.print_tensorhandle"(%c, %ch1) : (!corert.tensorhandle, !tfrt.chain) -> !tfrt.chain
  tfrt.return %ch2 : !tfrt.chain
}
