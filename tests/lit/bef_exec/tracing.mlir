// RUN: rtx bef-exec --enable_tracing %s.bef | FileCheck %s --check-prefixes=CHECK,DEFAULT
// RUN: rtx bef-exec --enable_tracing --tracing_level=debug %s.bef | FileCheck %s --check-prefixes=CHECK,DEBUG
// RUN: rtx bef-exec %s.bef | FileCheck %s --check-prefix=OFF
// RUN: not rtx bef-exec --enable_tracing --tracing_level=loud %s.bef 2>&1 | FileCheck %s --check-prefix=BAD

// TFRT's debug tracing sink: the driver's scopes (the executor, then each function run) at every
// level, each kernel run at `debug`, each scope closed by `End Scope`. The sink writes through a
// buffered stream, so its lines follow the run's own output.

// CHECK: --- Running 'adds'
// CHECK-NEXT: 'adds' returned 5
// CHECK-NEXT: --- Running 'says_hello'
// CHECK-NEXT: hello host executor!
// CHECK-NEXT: Scope:Bef Executor
// CHECK-NEXT: Scope:Function: adds
// DEBUG-NEXT: Scope:tfrt.constant.i32
// DEBUG-NEXT: End Scope
// DEBUG-NEXT: Scope:tfrt.constant.i32
// DEBUG-NEXT: End Scope
// DEBUG-NEXT: Scope:tfrt.add.i32
// DEBUG-NEXT: End Scope
// CHECK-NEXT: End Scope
// CHECK-NEXT: Scope:Function: says_hello
// DEBUG-NEXT: Scope:tfrt.new.chain
// DEBUG-NEXT: End Scope
// DEBUG-NEXT: Scope:tfrt_test.print_hello
// DEBUG-NEXT: End Scope
// CHECK-NEXT: End Scope
// CHECK-NEXT: End Scope
// DEFAULT-NOT: Scope:tfrt

// OFF-NOT: Scope:
// BAD: --tracing_level=loud

func.func @adds() -> i32 {
  %a = tfrt.constant.i32 2
  %b = tfrt.constant.i32 3
  %sum = tfrt.add.i32 %a, %b
  tfrt.return %sum : i32
}

func.func @says_hello() {
  %ch0 = tfrt.new.chain
  %ch1 = "tfrt_test.print_hello"(%ch0) : (!tfrt.chain) -> !tfrt.chain
  tfrt.return
}
