// The bytes of a one-kernel program, derived by hand from BEF's layout (docs/FORMATS.md):
//   0b ef 00                      magic, version 0
//   00 42 "i32\0main\0tfrt.constant.i32\0value\0"   strings, sorted, 33 bytes (length 33<<1)
//   01 08 2a 00 00 00             attributes: the i32 42, already 4-aligned (no alignment byte)
//   02 04 01 09                   kernels: one, its name at string offset 9
//   03 04 01 00                   types: one, "i32"
//   04 0e 01 00 00 04 00 01 00    function index: async, body at 0, name at 4, no arguments, one i32 result
//   05 81 28 ...                  functions: 84 bytes; location 0, one register used once, two kernels
//                                 (the pseudo kernel at 0, the constant at 36), result register 0, a
//                                 padding byte, then the kernel records as little-endian words
//   06 0e "t.mlir\0"              location strings
//   07 10 01 00 01 01 01 00 02 08 locations: the function at t.mlir:1:1, the kernel at t.mlir:2:8
//   08 06 01 00 08                attribute types: the attribute at 0 is an i32 (code 8)
//   09 06 01 02 1b                attribute names: one function, two kernels; the pseudo kernel has no
//                                 attributes, the constant one: "value" (string offset 27)
//   0a 06 01 01 00                register types: one function, one register of type 0
// RUN: rtx translate --mlir-to-bef %s | od -t x1 | FileCheck %s
// RUN: rtx translate --mlir-to-bef --disable-optional-sections %s | od -t x1 | FileCheck %s --check-prefix=SHORT

// CHECK:      0000000 0b ef 00 00 42 69 33 32 00 6d 61 69 6e 00 74 66
// CHECK-NEXT: 0000020 72 74 2e 63 6f 6e 73 74 61 6e 74 2e 69 33 32 00
// CHECK-NEXT: 0000040 76 61 6c 75 65 00 01 08 2a 00 00 00 02 04 01 09
// CHECK-NEXT: 0000060 03 04 01 00 04 0e 01 00 00 04 00 01 00 05 81 28
// CHECK-NEXT: 0000100 00 01 01 02 00 00 00 24 00 00 00 cc ab ab ab ab
// CHECK-NEXT: 0000120 cd cd cd cd 00 00 00 00 00 00 00 00 00 00 00 00
// CHECK-NEXT: 0000140 01 00 00 00 01 00 00 00 01 00 00 00 01 00 00 00
// CHECK-NEXT: 0000160 00 00 00 00 04 00 00 00 00 00 00 00 01 00 00 00
// CHECK-NEXT: 0000200 00 00 00 00 01 00 00 00 00 00 00 00 00 00 00 00
// CHECK-NEXT: 0000220 00 00 00 00 06 0e 74 2e 6d 6c 69 72 00 07 10 01
// CHECK-NEXT: 0000240 00 01 01 01 00 02 08 08 06 01 00 08 09 06 01 02
// CHECK-NEXT: 0000260 1b 0a 06 01 01 00
// CHECK-NEXT: 0000266

// Without the optional sections the string "value" is gone, so the attributes section starts at
// byte 32 and its body would land at 34: the length gets its alignment flag (09 = 4<<1|1), an
// alignment byte 04 and one padding byte cc follow. The file then ends after the locations.
// SHORT:      0000000 0b ef 00 00 36 69 33 32 00 6d 61 69 6e 00 74 66
// SHORT-NEXT: 0000020 72 74 2e 63 6f 6e 73 74 61 6e 74 2e 69 33 32 00
// SHORT-NEXT: 0000040 01 09 04 cc 2a 00 00 00 02 04 01 09 03 04 01 00
// SHORT-NEXT: 0000060 04 0e 01 00 00 04 00 01 00 05 81 28 00 01 01 02
// SHORT-NEXT: 0000100 00 00 00 24 00 00 00 cc ab ab ab ab cd cd cd cd
// SHORT-NEXT: 0000120 00 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00
// SHORT-NEXT: 0000140 01 00 00 00 01 00 00 00 01 00 00 00 00 00 00 00
// SHORT-NEXT: 0000160 04 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00
// SHORT-NEXT: 0000200 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
// SHORT-NEXT: 0000220 06 0e 74 2e 6d 6c 69 72 00 07 10 01 00 01 01 01
// SHORT-NEXT: 0000240 00 02 08
// SHORT-NEXT: 0000243

func.func @main() -> i32 {
  %x = tfrt.constant.i32 42 loc("t.mlir":2:8)
  tfrt.return %x : i32
} loc("t.mlir":1:1)
