// The BEF program c-examples/bef_kernel.c runs. Regenerate bef_kernel.bef from the repository root:
//   rtx translate --mlir-to-bef c-examples/bef_kernel.mlir -o c-examples/bef_kernel.bef
// (tests/all/runtime_bef.rs fails when the checked-in file differs.)

// x * factor + 2, where `my.scale.i32` is the kernel bef_kernel.c writes in C.
func.func @scale_plus_two(%x: i32) -> i32 {
  %scaled = "my.scale.i32"(%x) {factor = 3 : i64, label = "triple"} : (i32) -> i32
  %two = tfrt.constant.i32 2
  %y = tfrt.add.i32 %scaled, %two
  tfrt.return %y : i32
}
