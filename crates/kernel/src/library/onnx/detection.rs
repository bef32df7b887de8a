//! Object detection: `NonMaxSuppression`, the greedy choice of each class's highest-scoring
//! boxes that overlap no better-scoring chosen box by more than an IoU threshold.

use super::tensors::{error, integer, read_floats, register_one, Inputs, Typed};
use crate::library::nn::int;
use crate::KernelRegistry;

pub(super) const OPERATORS: &[&str] = &["NonMaxSuppression"];

/// A box as its corners: `(y1, x1, y2, x2)` with `y1 <= y2` and `x1 <= x2`.
#[derive(Clone, Copy, Debug)]
struct Corners([f64; 4]);

impl Corners {
    /// ONNX's box: two opposite corners in any order (`center_point_box` 0), or a center, a
    /// width and a height (`center_point_box` 1: `[x, y, w, h]`).
    fn new(b: &[f64], center: bool) -> Corners {
        if center {
            let (x, y, w, h) = (b[0], b[1], b[2] / 2.0, b[3] / 2.0);
            Corners([y - h, x - w, y + h, x + w])
        } else {
            Corners([b[0].min(b[2]), b[1].min(b[3]), b[0].max(b[2]), b[1].max(b[3])])
        }
    }

    fn area(self) -> f64 {
        (self.0[2] - self.0[0]) * (self.0[3] - self.0[1])
    }

    /// Intersection over union, 0 where either box or their intersection has no area.
    fn iou(self, other: Corners) -> f64 {
        let (a, b) = (self.0, other.0);
        let height = a[2].min(b[2]) - a[0].max(b[0]);
        let width = a[3].min(b[3]) - a[1].max(b[1]);
        if height <= 0.0 || width <= 0.0 {
            return 0.0;
        }
        let intersection = height * width;
        let union = self.area() + other.area() - intersection;
        if self.area() <= 0.0 || other.area() <= 0.0 || union <= 0.0 {
            return 0.0;
        }
        intersection / union
    }
}

/// The indices of the boxes chosen among `boxes` with `scores`: those scoring above
/// `score_threshold` by score, highest first (ties by index), each kept unless its IoU with a
/// box kept before exceeds `iou_threshold`, at most `limit` of them.
fn suppress(
    boxes: &[Corners],
    scores: &[f64],
    limit: usize,
    iou_threshold: f64,
    score_threshold: Option<f64>,
) -> Vec<usize> {
    let mut candidates: Vec<usize> =
        (0..scores.len()).filter(|&i| score_threshold.is_none_or(|t| scores[i] > t)).collect();
    // A stable sort keeps equal scores in index order.
    candidates.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let mut kept: Vec<usize> = Vec::new();
    for i in candidates {
        if kept.len() >= limit {
            break;
        }
        if kept.iter().all(|&k| boxes[k].iou(boxes[i]) <= iou_threshold) {
            kept.push(i);
        }
    }
    kept
}

pub(super) fn register(registry: &mut KernelRegistry) {
    register_one(registry, "NonMaxSuppression", |frame, inputs: &Inputs| {
        let boxes = read_floats(frame, inputs.required(0)?)?;
        let scores = read_floats(frame, inputs.required(1)?)?;
        let (batches, spatial, classes) = match (&boxes.dims[..], &scores.dims[..]) {
            (&[b, s, 4], &[b2, c, s2]) if b == b2 && s == s2 => (b, s, c),
            _ => {
                return Err(error(
                    frame,
                    format_args!("boxes {:?} and scores {:?} are not [b, n, 4] and [b, c, n]", boxes.dims, scores.dims),
                ))
            }
        };
        let limit = match inputs.optional(2) {
            Some(t) => usize::try_from(integer(frame, t)?).unwrap_or(0),
            None => 0,
        };
        let threshold = |index: usize| -> Result<Option<f64>, crate::KernelError> {
            let Some(t) = inputs.optional(index) else { return Ok(None) };
            match read_floats(frame, t)?.values[..] {
                [value] => Ok(Some(value)),
                ref values => Err(error(frame, format_args!("a threshold of {} values", values.len()))),
            }
        };
        let iou_threshold = threshold(3)?.unwrap_or(0.0);
        if !(0.0..=1.0).contains(&iou_threshold) {
            return Err(error(frame, format_args!("iou_threshold {iou_threshold} is outside [0, 1]")));
        }
        let score_threshold = threshold(4)?;
        let center = int(frame, "center_point_box", 0)? != 0;
        let mut selected = Vec::new();
        for b in 0..batches {
            let corners: Vec<Corners> = boxes.values[b * spatial * 4..][..spatial * 4]
                .chunks_exact(4)
                .map(|c| Corners::new(c, center))
                .collect();
            for c in 0..classes {
                let class_scores = &scores.values[(b * classes + c) * spatial..][..spatial];
                for i in suppress(&corners, class_scores, limit, iou_threshold, score_threshold) {
                    selected.extend([b as i64, c as i64, i as i64]);
                }
            }
        }
        Typed { dims: vec![selected.len() / 3, 3], values: selected }.into_tensor(frame, crate::DType::I64)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlaps_above_the_threshold_are_suppressed_ties_by_index() {
        // Boxes 0 and 1 ([0, 0, 1, 1] and [0, 0.5, 1, 1.5], unit squares) intersect in 0.5,
        // their union 1.5: IoU 1/3. Box 2 is apart.
        let boxes: Vec<Corners> =
            [[0.0, 0.0, 1.0, 1.0], [0.0, 0.5, 1.0, 1.5], [5.0, 5.0, 6.0, 6.0], [1.0, 1.0, 0.0, 0.0]]
                .iter()
                .map(|b| Corners::new(b, false))
                .collect();
        assert!((boxes[0].iou(boxes[1]) - 1.0 / 3.0).abs() < 1e-12);
        // Box 3 is box 0 flipped: identical.
        assert_eq!(boxes[0].iou(boxes[3]), 1.0);
        let scores = [0.9, 0.8, 0.7, 0.9];
        // Equal scores 0.9: box 0 before box 3, which it suppresses.
        assert_eq!(suppress(&boxes, &scores, 10, 0.5, None), [0, 1, 2]);
        // An IoU equal to the threshold is kept; above it, suppressed.
        assert_eq!(suppress(&boxes, &scores, 10, 1.0 / 3.0, None), [0, 1, 2]);
        assert_eq!(suppress(&boxes, &scores, 10, 0.3, None), [0, 2]);
        // Scores must exceed the score threshold; the limit counts kept boxes.
        assert_eq!(suppress(&boxes, &scores, 10, 0.5, Some(0.8)), [0]);
        assert_eq!(suppress(&boxes, &scores, 2, 0.5, None), [0, 1]);
        assert!(suppress(&boxes, &scores, 0, 0.5, None).is_empty());
    }

    #[test]
    fn center_boxes_become_corners() {
        let b = Corners::new(&[0.5, 1.0, 1.0, 2.0], true);
        assert_eq!(b.0, [0.0, 0.0, 2.0, 1.0]);
    }
}
