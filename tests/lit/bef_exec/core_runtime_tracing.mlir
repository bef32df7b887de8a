// TFRT's scope lines around Core Runtime's ops: `OP#op_handler=HANDLER#` at the default level.
// RUN: rtx bef-exec --enable_tracing --tracing_level=default %s.bef | FileCheck %s

// CHECK-LABEL: --- Running 'traced_ops'
func.func @traced_ops() -> !tfrt.chain {
  %ch0 = tfrt.new.chain
  %cpu = corert.get_op_handler %ch0 "cpu"
  %x = corert.executeop(%cpu) "tfrt_test.create_from_scalar"() { shape = [2: i64], value = 3: i32 } : 1
  %y = corert.executeop(%cpu) "tfrt_test.add"(%x, %x) : 1
  // CHECK-NEXT: ScalarHostTensor dtype = i32, shape = [2], value = 6
  %ch1 = "corert.print_tensorhandle"(%y, %ch0) : (!corert.tensorhandle, !tfrt.chain) -> !tfrt.chain
  tfrt.return %ch1 : !tfrt.chain
}

// The scopes print when the run ends.
// CHECK: Scope:Bef Executor
// CHECK-NEXT: Scope:Function: traced_ops
// CHECK-NEXT: Scope:tfrt_test.create_from_scalar#op_handler=cpu#
// CHECK-NEXT: End Scope
// CHECK-NEXT: Scope:tfrt_test.add#op_handler=cpu#
// CHECK-NEXT: End Scope
// CHECK-NEXT: End Scope
// CHECK-NEXT: End Scope
