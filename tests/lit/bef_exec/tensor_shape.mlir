// RUN: rtx bef-exec %s.bef | FileCheck %s

// ts.*: shapes from attributes, printed, compared, counted, read by dimension and converted.

// CHECK-LABEL: --- Running 'shapes'
func.func @shapes() -> (i1, i1, i64) {
  %ch0 = tfrt.new.chain
  %a = ts.build_shape [2 : i64, 3 : i64, 4 : i64]
  // CHECK-NEXT: shape = [2, 3, 4]
  %ch1 = ts.print_shape %a, %ch0
  %fixed = ts.as_fixed_rank_shape.3 %a
  // CHECK-NEXT: fixed_rank_shape = [2, 3, 4]
  %ch2 = ts.print_fixed_rank_shape.3 %fixed, %ch1
  %partial = ts.to_partial_shape %a
  // CHECK-NEXT: partial_tensor_shape = [2, 3, 4]
  %ch3 = ts.print_partial_shape %partial, %ch2
  %b = ts.to_shape %partial
  %same = ts.equal_shape %a, %b
  %scalar = ts.build_shape []
  %differ = ts.equal_shape %a, %scalar
  %n = ts.get_num_elements %a
  // CHECK-NEXT: 'shapes' returned 1,0,24
  tfrt.return %same, %differ, %n : i1, i1, i64
}

// CHECK-LABEL: --- Running 'unknown_dimensions'
func.func @unknown_dimensions() -> (!tfrt.chain, !ts.shape) {
  %ch0 = tfrt.new.chain
  %unranked = ts.build_unranked_partial_shape
  // CHECK-NEXT: partial_tensor_shape = Unknown rank
  %ch1 = ts.print_partial_shape %unranked, %ch0
  %partial = ts.build_partial_shape [-1 : i64, 5 : i64, -1 : i64]
  // expected-error @+1 {{runtime error: Unknown dimensions at following indices = [0, 2]}}
  %shape = ts.to_shape %partial
  // CHECK-NEXT: 'unknown_dimensions' returned !tfrt.chain value,<<error: Unknown dimensions at following indices = [0, 2]>>
  tfrt.return %ch1, %shape : !tfrt.chain, !ts.shape
}

// CHECK-LABEL: --- Running 'dimensions'
func.func @dimensions() -> (i64, i64) {
  %shape = ts.build_shape [7 : i64, 0 : i64, 9 : i64]
  %zero = tfrt.constant.i32 0
  %first = ts.get_dimension %shape, %zero
  %three = tfrt.constant.i32 3
  // expected-error @+1 {{runtime error: shape [7, 0, 9] has no dimension 3 (its rank is 3)}}
  %past = ts.get_dimension %shape, %three
  // CHECK-NEXT: 'dimensions' returned 7,<<error: shape [7, 0, 9] has no dimension 3 (its rank is 3)>>
  tfrt.return %first, %past : i64, i64
}
