// Attributes of every kind BEF encodes come back as the attributes they were written from.
// RUN: rtx translate --bef-to-mlir %s.bef | rtx opt | FileCheck %s

// CHECK-LABEL: func.func @scalars()
func.func @scalars() {
  // CHECK-NEXT: "t.op"() {a = true, b = -7 : i8, c = -300 : i16, d = 70000 : i32, e = -5000000000} : () -> ()
  "t.op"() {a = true, b = -7 : i8, c = -300 : i16, d = 70000 : i32, e = -5000000000 : i64} : () -> ()
  // CHECK-NEXT: "t.op"() {a = 255 : ui8, b = 65535 : ui16, c = 4294967295 : ui32, d = 18446744073709551615 : ui64} : () -> ()
  "t.op"() {a = 255 : ui8, b = 65535 : ui16, c = 4294967295 : ui32, d = 18446744073709551615 : ui64} : () -> ()
  // CHECK-NEXT: "t.op"() {a = 1.500000e+00 : f16, b = -2.500000e-01 : bf16, c = 3.14159274 : f32, d = -1.000000e-300} : () -> ()
  "t.op"() {a = 1.5 : f16, b = -0.25 : bf16, c = 3.14159274 : f32, d = -1.0e-300 : f64} : () -> ()
  // CHECK-NEXT: "t.op"() {a = "", b = "tab\09quote\22"} : () -> ()
  "t.op"() {a = "", b = "tab\09quote\22"} : () -> ()
  tfrt.return
}

// CHECK-LABEL: func.func @arrays()
func.func @arrays() {
  // CHECK-NEXT: "t.op"() {a = [], b = [true, false], c = [1 : i8, -1 : i8], d = [1 : i16], e = [1 : i32, 2 : i32]} : () -> ()
  "t.op"() {a = [], b = [true, false], c = [1 : i8, -1 : i8], d = [1 : i16], e = [1 : i32, 2 : i32]} : () -> ()
  // CHECK-NEXT: "t.op"() {a = [1, -2], b = [7 : ui8], c = [7 : ui16], d = [7 : ui32], e = [7 : ui64]} : () -> ()
  "t.op"() {a = [1 : i64, -2 : i64], b = [7 : ui8], c = [7 : ui16], d = [7 : ui32], e = [7 : ui64]} : () -> ()
  // CHECK-NEXT: "t.op"() {a = [1.000000e+00 : f16], b = [2.000000e+00 : bf16], c = [5.000000e-01 : f32], d = [2.500000e-01, 1.250000e-01]} : () -> ()
  "t.op"() {a = [1.0 : f16], b = [2.0 : bf16], c = [0.5 : f32], d = [0.25, 0.125]} : () -> ()
  tfrt.return
}

// CHECK-LABEL: func.func @types()
func.func @types() {
  // CHECK-NEXT: "t.op"() {a = i1, b = ui8, c = ui16, d = ui32, e = ui64, f = i8, g = i16, h = i32, i = i64} : () -> ()
  "t.op"() {a = i1, b = ui8, c = ui16, d = ui32, e = ui64, f = i8, g = i16, h = i32, i = i64} : () -> ()
  // CHECK-NEXT: "t.op"() {a = f16, b = bf16, c = f32, d = f64, e = complex<f32>, f = complex<f64>} : () -> ()
  "t.op"() {a = f16, b = bf16, c = f32, d = f64, e = complex<f32>, f = complex<f64>} : () -> ()
  // CHECK-NEXT: "t.op"() {a = !corert.string, b = !corert.resource, c = !corert.variant} : () -> ()
  "t.op"() {a = !corert.string, b = !corert.resource, c = !corert.variant} : () -> ()
  // CHECK-NEXT: "t.op"() {a = !corert.quint8, b = !corert.quint16, c = !corert.qint8, d = !corert.qint16, e = !corert.qint32} : () -> ()
  "t.op"() {a = !corert.quint8, b = !corert.quint16, c = !corert.qint8, d = !corert.qint16, e = !corert.qint32} : () -> ()
  // CHECK-NEXT: "t.op"() {a = [i32, !corert.string, complex<f64>]} : () -> ()
  "t.op"() {a = [i32, !corert.string, complex<f64>]} : () -> ()
  tfrt.return
}

// CHECK-LABEL: func.func @dense()
func.func @dense() {
  // CHECK-NEXT: "t.op"() {a = dense<[1, 2, 3]> : tensor<3xi32>, b = dense<7> : tensor<2x2xi64>, c = dense<-1> : tensor<i8>} : () -> ()
  "t.op"() {a = dense<[1, 2, 3]> : tensor<3xi32>, b = dense<7> : tensor<2x2xi64>, c = dense<-1> : tensor<i8>} : () -> ()
  // CHECK-NEXT: "t.op"() {a = dense<[true, false, true]> : tensor<3xi1>, b = dense<true> : tensor<2xi1>, c = dense<false> : tensor<9xi1>} : () -> ()
  "t.op"() {a = dense<[true, false, true]> : tensor<3xi1>, b = dense<true> : tensor<2xi1>, c = dense<false> : tensor<9xi1>} : () -> ()
  // CHECK-NEXT: "t.op"() {a = dense<{{\[}}[1, 2], [3, 4]]> : tensor<2x2xui16>, b = dense<[1.500000e+00, -2.000000e+00]> : tensor<2xbf16>} : () -> ()
  "t.op"() {a = dense<[[1, 2], [3, 4]]> : tensor<2x2xui16>, b = dense<[1.5, -2.0]> : tensor<2xbf16>} : () -> ()
  // CHECK-NEXT: "t.op"() {a = dense<(1.000000e+00,-2.000000e+00)> : tensor<complex<f32>>, b = dense<[(1.000000e+00,0.000000e+00), (0.000000e+00,1.000000e+00)]> : tensor<2xcomplex<f64>>} : () -> ()
  "t.op"() {a = dense<(1.0, -2.0)> : tensor<complex<f32>>, b = dense<[(1.0, 0.0), (0.0, 1.0)]> : tensor<2xcomplex<f64>>} : () -> ()
  // CHECK-NEXT: "t.op"() {a = dense<> : tensor<0xf32>, b = dense<2.500000e-01> : tensor<1xf64>, c = dense<1.000000e+00> : tensor<1x1xf16>} : () -> ()
  "t.op"() {a = dense<> : tensor<0xf32>, b = dense<0.25> : tensor<1xf64>, c = dense<1.0> : tensor<1x1xf16>} : () -> ()
  tfrt.return
}

// CHECK-LABEL: func.func @shapes_and_aggregates()
func.func @shapes_and_aggregates() {
  // CHECK-NEXT: "t.op"() {a = #corert.shape<2x?x3>, b = #corert.shape<*>, c = #corert.shape<>} : () -> ()
  "t.op"() {a = #corert.shape<2x?x3>, b = #corert.shape<*>, c = #corert.shape<>} : () -> ()
  // CHECK-NEXT: "t.op"() {a = [1 : i32, "s", [2, [f32, #corert.shape<4>]], dense<1> : tensor<2xi8>, []]} : () -> ()
  "t.op"() {a = [1 : i32, "s", [2 : i64, [f32, #corert.shape<4>]], dense<1> : tensor<2xi8>, []]} : () -> ()
  // CHECK-NEXT: "t.op"() {a = ["x", "y"], b = {{\[}}[1 : i32], [2 : i32, 3 : i32]]} : () -> ()
  "t.op"() {a = ["x", "y"], b = [[1 : i32], [2 : i32, 3 : i32]]} : () -> ()
  tfrt.return
}

// One attribute used by several kernels is stored once and read back by each.
// CHECK-LABEL: func.func @shared()
func.func @shared() -> (i32, i32) {
  // CHECK-NEXT: %0 = tfrt.constant.i32 5
  // CHECK-NEXT: %1 = tfrt.constant.i32 5
  %a = tfrt.constant.i32 5
  %b = tfrt.constant.i32 5
  tfrt.return %a, %b : i32, i32
}
