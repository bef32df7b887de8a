// RUN: rtx bef-exec %s.bef | FileCheck %s

// vt.value announces its lifetime: made and moved into the result by the kernel, destroyed
// when the executor drops its last use. share_to_two makes no copy.

// CHECK-LABEL: --- Running 'shared_value'
func.func @shared_value() {
  %ch0 = tfrt.new.chain
  // CHECK-NEXT: constructed vt.value(2)
  // CHECK-NEXT: move constructed vt.value(2)
  %v = "vt.constant"() {value = 2 : i32} : () -> !vt.value
  %x, %y = "tfrt_test.share_to_two"(%v) : (!vt.value) -> (!vt.value, !vt.value)
  // CHECK-NEXT: constructed vt.value(4)
  // CHECK-NEXT: move constructed vt.value(4)
  %sum = "vt.add"(%x, %y) : (!vt.value, !vt.value) -> !vt.value
  // CHECK-NEXT: destroyed vt.value(2)
  // CHECK-NEXT: print vt_value(4)
  // CHECK-NEXT: destroyed vt.value(4)
  %ch1 = "vt.print"(%sum, %ch0) : (!vt.value, !tfrt.chain) -> !tfrt.chain
  // CHECK-NOT: vt.value
  tfrt.return
}
