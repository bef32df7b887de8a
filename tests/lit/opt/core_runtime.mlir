// Core Runtime's ops in their custom forms, printed back as written and read again.
// RUN: rtx opt %s | rtx opt | FileCheck %s
// RUN: rtx opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @ops(%arg0: !corert.tensorhandle, %arg1: !corert.tensorhandle)
func.func @ops(%x: !corert.tensorhandle, %y: !corert.tensorhandle) -> !tfrt.chain {
  // CHECK-NEXT: %0 = tfrt.new.chain
  %ch = tfrt.new.chain
  // CHECK-NEXT: %1 = corert.get_op_handler %0 "cpu"
  %cpu = corert.get_op_handler %ch "cpu"
  // Attributes keep the order they were written in; function attributes come second.
  // CHECK-NEXT: %2:2 = corert.executeop(%1) "my.op"(%arg0, %arg1) {z = 1 : i32, a = [2, 3]} {f = "g"} : 2
  // GENERIC: "corert.executeop"(%1, %arg0, %arg1) {op_attrs = {{\[}}["z", 1 : i32], ["a", [2, 3]]], op_func_attrs = {{\[}}["f", "g"]], op_name = "my.op"} : (!corert.ophandler, !corert.tensorhandle, !corert.tensorhandle) -> (!corert.tensorhandle, !corert.tensorhandle)
  %r:2 = corert.executeop(%cpu) "my.op"(%x, %y) {z = 1 : i32, a = [2, 3]} {f = "g"} : 2
  // The chain and the handles of the sequenced form are named apart.
  // CHECK-NEXT: %3, %4:2 = corert.executeop.seq(%1, %0) "my.op"(%2#1) : 2
  %c, %s:2 = corert.executeop.seq(%cpu, %ch) "my.op"(%r#1) : 2
  // CHECK-NEXT: %5 = corert.executeop.seq(%1, %3) "my.print"(%4#0)
  %c2 = corert.executeop.seq(%cpu, %c) "my.print"(%s#0) : 0
  // CHECK-NEXT: %6 = corert.const_dense_tensor dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  %d = corert.const_dense_tensor dense<[1.0, 2.0]> : tensor<2xf32>
  // CHECK-NEXT: %7 = corert.create_dense_tensor.i8 {shape = [2], value = [1 : i8, -1 : i8]}
  %e = corert.create_dense_tensor.i8 {shape = [2], value = [1 : i8, -1 : i8]}
  // CHECK-NEXT: %8 = corert.tensorhandle_to_int32 %7
  %i = corert.tensorhandle_to_int32 %e
  // CHECK-NEXT: %9:2 = corert.cond %6 @pick @pick(%5, %arg0) : (!corert.tensorhandle) -> (!corert.tensorhandle)
  %t:2 = corert.cond %d @pick @pick (%c2, %x) : (!corert.tensorhandle) -> (!corert.tensorhandle)
  // CHECK-NEXT: %10:2 = corert.while @test @pick(%9#0, %9#1) : (!corert.tensorhandle) -> (!corert.tensorhandle)
  %w:2 = corert.while @test @pick (%t#0, %t#1) : (!corert.tensorhandle) -> (!corert.tensorhandle)
  // CHECK-NEXT: %11 = "corert.create_null_op_handler"() : () -> !corert.ophandler
  %null = "corert.create_null_op_handler"() : () -> !corert.ophandler
  // CHECK-NEXT: %12 = corert.register_op_handler %11 "other"
  %reg = corert.register_op_handler %null "other"
  // CHECK-NEXT: tfrt.return %10#0 : !tfrt.chain
  tfrt.return %w#0 : !tfrt.chain
}

func.func @pick(%ch: !tfrt.chain, %x: !corert.tensorhandle) -> (!tfrt.chain, !corert.tensorhandle) {
  tfrt.return %ch, %x : !tfrt.chain, !corert.tensorhandle
}

func.func @test(%ch: !tfrt.chain, %x: !corert.tensorhandle) -> (!tfrt.chain, !corert.tensorhandle) {
  tfrt.return %ch, %x : !tfrt.chain, !corert.tensorhandle
}
