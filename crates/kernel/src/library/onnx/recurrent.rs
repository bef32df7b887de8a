//! Recurrent layers: `RNN`, `GRU` and `LSTM`, forward, reverse or both ways, with ONNX's
//! activations (and their `activation_alpha`/`activation_beta`), `clip`, `sequence_lens`,
//! initial states, LSTM's peepholes and `input_forget`, GRU's `linear_before_reset`, and both
//! layouts (`layout` 0: `[seq, batch, ...]`; 1: `[batch, seq, ...]`). Every output is made: `Y`,
//! `Y_h` and LSTM's `Y_c`. The float types compute in f64.

use super::tensors::{element_count, error, filled, floats, integers, read_floats, string, strings, Inputs, Typed};
use crate::dtype::DType;
use crate::library::nn::gemm::{packed_gemm, Matrix};
use crate::library::nn::{float as float_attribute, int};
use crate::{KernelError, KernelFrame, KernelRegistry, KernelSite};

pub(super) const OPERATORS: &[&str] = &["GRU", "LSTM", "RNN"];

#[derive(Clone, Copy, PartialEq, Debug)]
enum Cell {
    Rnn,
    Gru,
    Lstm,
}

impl Cell {
    /// The gates whose weights `W`, `R` and `B` stack, in ONNX's order.
    fn gates(self) -> usize {
        match self {
            Cell::Rnn => 1,
            Cell::Gru => 3,
            Cell::Lstm => 4,
        }
    }

    /// The activations of one direction when the node names none.
    fn default_activations(self) -> &'static [&'static str] {
        match self {
            Cell::Rnn => &["Tanh"],
            Cell::Gru => &["Sigmoid", "Tanh"],
            Cell::Lstm => &["Sigmoid", "Tanh", "Tanh"],
        }
    }
}

/// An activation function that ONNX's recurrent operators name, with its parameters.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Activation {
    Relu,
    Tanh,
    Sigmoid,
    Affine(f64, f64),
    LeakyRelu(f64),
    ThresholdedRelu(f64),
    ScaledTanh(f64, f64),
    HardSigmoid(f64, f64),
    Elu(f64),
    Softsign,
    Softplus,
}

impl Activation {
    /// The activation `name` (case-insensitive), taking its alpha and beta, where it has them, from
    /// the front of `alphas` and `betas` (ONNX's defaults when they run out).
    fn new(name: &str, alphas: &mut impl Iterator<Item = f64>, betas: &mut impl Iterator<Item = f64>) -> Option<Self> {
        let mut alpha = |default: f64| alphas.next().unwrap_or(default);
        Some(match name.to_ascii_lowercase().as_str() {
            "relu" => Activation::Relu,
            "tanh" => Activation::Tanh,
            "sigmoid" => Activation::Sigmoid,
            "affine" => Activation::Affine(alpha(1.0), betas.next().unwrap_or(0.0)),
            "leakyrelu" => Activation::LeakyRelu(alpha(0.01)),
            "thresholdedrelu" => Activation::ThresholdedRelu(alpha(1.0)),
            "scaledtanh" => Activation::ScaledTanh(alpha(1.0), betas.next().unwrap_or(1.0)),
            "hardsigmoid" => Activation::HardSigmoid(alpha(0.2), betas.next().unwrap_or(0.5)),
            "elu" => Activation::Elu(alpha(1.0)),
            "softsign" => Activation::Softsign,
            "softplus" => Activation::Softplus,
            _ => return None,
        })
    }

    fn apply(self, x: f64) -> f64 {
        match self {
            Activation::Relu => x.max(0.0),
            Activation::Tanh => x.tanh(),
            Activation::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            Activation::Affine(alpha, beta) => alpha * x + beta,
            Activation::LeakyRelu(alpha) => {
                if x < 0.0 {
                    alpha * x
                } else {
                    x
                }
            }
            Activation::ThresholdedRelu(alpha) => {
                if x > alpha {
                    x
                } else {
                    0.0
                }
            }
            Activation::ScaledTanh(alpha, beta) => alpha * (beta * x).tanh(),
            Activation::HardSigmoid(alpha, beta) => (alpha * x + beta).clamp(0.0, 1.0),
            Activation::Elu(alpha) => {
                if x < 0.0 {
                    alpha * x.exp_m1()
                } else {
                    x
                }
            }
            Activation::Softsign => x / (1.0 + x.abs()),
            Activation::Softplus => {
                if x > 30.0 {
                    x
                } else {
                    x.exp().ln_1p()
                }
            }
        }
    }
}

/// A recurrent layer's operands and attributes, with the sequence in `[seq, batch, ...]` order
/// (layout 0) whatever the node's layout.
struct Layer {
    cell: Cell,
    seq: usize,
    batch: usize,
    input: usize,
    hidden: usize,
    /// One entry per direction: whether it runs from the sequence's end.
    reverse: Vec<bool>,
    /// `[seq, batch, input]`.
    x: Vec<f64>,
    /// `[dirs, gates * hidden, input]`.
    w: Vec<f64>,
    /// `[dirs, gates * hidden, hidden]`.
    r: Vec<f64>,
    /// `[dirs, 2 * gates * hidden]`: `W`'s biases, then `R`'s.
    b: Vec<f64>,
    /// Each batch entry's sequence length.
    lens: Vec<usize>,
    /// `[dirs, batch, hidden]`.
    h0: Vec<f64>,
    c0: Vec<f64>,
    /// `[dirs, 3 * hidden]`: the input, output and forget gates' peepholes.
    p: Vec<f64>,
    clip: Option<f64>,
    linear_before_reset: bool,
    input_forget: bool,
    /// Each direction's activations (`f`, `g`, `h` as the cell has them).
    activations: Vec<Vec<Activation>>,
}

/// What a layer computes: `Y` `[seq, dirs, batch, hidden]`, `Y_h` and `Y_c` `[dirs, batch,
/// hidden]`.
struct States {
    y: Vec<f64>,
    h: Vec<f64>,
    c: Vec<f64>,
}

/// `row · v` for each row of the `rows × v.len()` matrix `m`, added to `out`. Four partial sums
/// per row, so that the compiler keeps them in vector lanes.
fn multiply_add(m: &[f64], v: &[f64], out: &mut [f64]) {
    for (o, row) in out.iter_mut().zip(m.chunks_exact(v.len().max(1))) {
        let mut lanes = [0.0f64; 4];
        let (rows, vs) = (row.chunks_exact(4), v.chunks_exact(4));
        let tail: f64 = rows.remainder().iter().zip(vs.remainder()).map(|(a, b)| a * b).sum();
        for (a, b) in rows.zip(vs) {
            for k in 0..4 {
                lanes[k] += a[k] * b[k];
            }
        }
        *o += (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + tail;
    }
}

impl Layer {
    fn run(&self) -> Result<States, String> {
        let (h, batch, dirs) = (self.hidden, self.batch, self.reverse.len());
        let g = self.cell.gates() * h;
        let mut y = filled(super::tensors::count(&[self.seq, dirs, batch, h])?, 0.0)?;
        let mut final_h = self.h0.clone();
        let mut final_c = self.c0.clone();
        for (d, &reverse) in self.reverse.iter().enumerate() {
            let w = &self.w[d * g * self.input..][..g * self.input];
            let r = &self.r[d * g * h..][..g * h];
            let (wb, rb) = self.b[d * 2 * g..][..2 * g].split_at(g);
            let p = &self.p[d * 3 * h..][..3 * h];
            let act = &self.activations[d];
            // `W·x + Wb` of every time step and batch entry at once: one GEMM, `[seq * batch, g]`.
            let rows = self.seq * batch;
            let mut xw_all = filled(super::tensors::count(&[rows, g])?, 0.0)?;
            for row in xw_all.chunks_exact_mut(g.max(1)) {
                row.copy_from_slice(wb);
            }
            let xs = Matrix { offset: 0, rows: self.input, columns: 1 };
            let ws = Matrix { offset: 0, rows: 1, columns: self.input };
            packed_gemm((rows, self.input, g), 1.0, (&self.x, xs), (w, ws), 1.0, &mut xw_all, g);
            for n in 0..batch {
                let state = (d * batch + n) * h..(d * batch + n + 1) * h;
                let mut hs = self.h0[state.clone()].to_vec();
                let mut cs = self.c0[state.clone()].to_vec();
                let len = self.lens[n];
                for step in 0..len {
                    let t = if reverse { len - 1 - step } else { step };
                    let xw = &xw_all[(t * batch + n) * g..][..g];
                    let mut hr = rb.to_vec();
                    multiply_add(r, &hs, &mut hr);
                    hs = self.step(act, p, r, rb, xw, &hr, &hs, &mut cs);
                    y[((t * dirs + d) * batch + n) * h..][..h].copy_from_slice(&hs);
                }
                final_h[state.clone()].copy_from_slice(&hs);
                final_c[state].copy_from_slice(&cs);
            }
        }
        Ok(States { y, h: final_h, c: final_c })
    }

    /// One step of one batch entry: the new hidden state from `xw` (`W·x + Wb`), `hr` (`R·h +
    /// Rb`) and the previous state `hs`; an LSTM's cell state `cs` is updated in place.
    #[allow(clippy::too_many_arguments)]
    fn step(
        &self,
        act: &[Activation],
        p: &[f64],
        r: &[f64],
        rb: &[f64],
        xw: &[f64],
        hr: &[f64],
        hs: &[f64],
        cs: &mut [f64],
    ) -> Vec<f64> {
        let h = self.hidden;
        let clip = |v: f64| self.clip.map_or(v, |c| v.clamp(-c, c));
        let gate = |f: Activation, k: usize, j: usize| f.apply(clip(xw[k * h + j] + hr[k * h + j]));
        match self.cell {
            Cell::Rnn => (0..h).map(|j| gate(act[0], 0, j)).collect(),
            Cell::Gru => {
                let z: Vec<f64> = (0..h).map(|j| gate(act[0], 0, j)).collect();
                let reset: Vec<f64> = (0..h).map(|j| gate(act[0], 1, j)).collect();
                let candidate: Vec<f64> = if self.linear_before_reset {
                    (0..h).map(|j| act[1].apply(clip(xw[2 * h + j] + reset[j] * hr[2 * h + j]))).collect()
                } else {
                    let rh: Vec<f64> = reset.iter().zip(hs).map(|(a, b)| a * b).collect();
                    let mut n = rb[2 * h..3 * h].to_vec();
                    multiply_add(&r[2 * h * h..3 * h * h], &rh, &mut n);
                    (0..h).map(|j| act[1].apply(clip(xw[2 * h + j] + n[j]))).collect()
                };
                (0..h).map(|j| (1.0 - z[j]) * candidate[j] + z[j] * hs[j]).collect()
            }
            Cell::Lstm => {
                // Gates in W: input, output, forget, cell; peepholes: input, output, forget.
                let pre = |k: usize, j: usize| xw[k * h + j] + hr[k * h + j];
                let mut out = vec![0.0; h];
                for j in 0..h {
                    let i = act[0].apply(clip(pre(0, j) + p[j] * cs[j]));
                    let f =
                        if self.input_forget { 1.0 - i } else { act[0].apply(clip(pre(2, j) + p[2 * h + j] * cs[j])) };
                    let c = act[1].apply(clip(pre(3, j)));
                    cs[j] = f * cs[j] + i * c;
                    let o = act[0].apply(clip(pre(1, j) + p[h + j] * cs[j]));
                    out[j] = o * act[2].apply(cs[j]);
                }
                out
            }
        }
    }
}

/// `values` of a tensor `[a, b, rest]` with its first two axes swapped.
fn swap_leading(values: &[f64], a: usize, b: usize, rest: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(values.len());
    for j in 0..b {
        for i in 0..a {
            out.extend_from_slice(&values[(i * b + j) * rest..][..rest]);
        }
    }
    out
}

/// Input `index` when the node has it, checked to be of `dims` (`what` names it in errors).
fn optional_input(
    site: &KernelSite<'_>,
    inputs: &Inputs,
    index: usize,
    what: &str,
    dims: &[usize],
) -> Result<Option<Vec<f64>>, KernelError> {
    let Some(tensor) = inputs.optional(index) else { return Ok(None) };
    let typed = read_floats(site, tensor)?;
    if typed.dims != dims {
        return Err(error(site, format_args!("{what} has the shape {:?}, not {dims:?}", typed.dims)));
    }
    Ok(Some(typed.values))
}

fn layer(site: &KernelSite<'_>, cell: Cell, inputs: &Inputs) -> Result<(Layer, DType, bool), KernelError> {
    let x = inputs.required(0)?;
    let dtype = x.dtype();
    let x = read_floats(site, x)?;
    let w = read_floats(site, inputs.required(1)?)?;
    let r = read_floats(site, inputs.required(2)?)?;
    for (what, t) in [("X", &x), ("W", &w), ("R", &r)] {
        if t.dims.len() != 3 {
            return Err(error(site, format_args!("{what} has the shape {:?}, not three dimensions", t.dims)));
        }
    }
    let layout = int(site, "layout", 0)?;
    let batch_first = match layout {
        0 => false,
        1 => true,
        _ => return Err(error(site, format_args!("layout {layout} is neither 0 nor 1"))),
    };
    let (seq, batch, input) =
        if batch_first { (x.dims[1], x.dims[0], x.dims[2]) } else { (x.dims[0], x.dims[1], x.dims[2]) };
    let direction = string(site, "direction", "forward")?;
    let reverse = match direction {
        "forward" => vec![false],
        "reverse" => vec![true],
        "bidirectional" => vec![false, true],
        _ => return Err(error(site, format_args!("direction `{direction}` is not forward, reverse or bidirectional"))),
    };
    let dirs = reverse.len();
    let hidden = match int(site, "hidden_size", -1)? {
        -1 => r.dims[2],
        h => usize::try_from(h).map_err(|_| error(site, format_args!("hidden_size {h} is negative")))?,
    };
    let g = cell
        .gates()
        .checked_mul(hidden)
        .ok_or_else(|| error(site, format_args!("hidden_size {hidden} is too large")))?;
    if w.dims != [dirs, g, input] {
        return Err(error(site, format_args!("W has the shape {:?}, not {:?}", w.dims, [dirs, g, input])));
    }
    if r.dims != [dirs, g, hidden] {
        return Err(error(site, format_args!("R has the shape {:?}, not {:?}", r.dims, [dirs, g, hidden])));
    }
    let state = element_count(site, &[dirs, batch, hidden])?;
    let state_dims = if batch_first { [batch, dirs, hidden] } else { [dirs, batch, hidden] };
    let b = optional_input(site, inputs, 3, "B", &[dirs, 2 * g])?;
    let lens = match inputs.optional(4) {
        None => vec![seq; batch],
        Some(tensor) => {
            let lens = integers(site, tensor)?;
            if lens.len() != batch {
                return Err(error(
                    site,
                    format_args!("sequence_lens has {} entries for a batch of {batch}", lens.len()),
                ));
            }
            lens.iter()
                .map(|&l| usize::try_from(l).ok().filter(|&l| l <= seq))
                .collect::<Option<Vec<usize>>>()
                .ok_or_else(|| error(site, format_args!("sequence_lens {lens:?} is outside 0 to {seq}")))?
        }
    };
    let from_layout = |values: Vec<f64>| if batch_first { swap_leading(&values, batch, dirs, hidden) } else { values };
    let h0 = optional_input(site, inputs, 5, "initial_h", &state_dims)?.map(from_layout);
    let c0 = optional_input(site, inputs, 6, "initial_c", &state_dims)?.map(from_layout);
    let p = optional_input(site, inputs, 7, "P", &[dirs, 3 * hidden])?;
    if cell != Cell::Lstm && (c0.is_some() || p.is_some()) {
        return Err(error(site, "only LSTM takes initial_c and P"));
    }
    let x = if batch_first { swap_leading(&x.values, batch, seq, input) } else { x.values };

    let names = strings(site, "activations")?;
    let per_direction = cell.default_activations().len();
    let names: Vec<&str> = match names.len() {
        0 => cell.default_activations().iter().copied().cycle().take(per_direction * dirs).collect(),
        n if n == per_direction => names.iter().map(String::as_str).cycle().take(per_direction * dirs).collect(),
        n if n == per_direction * dirs => names.iter().map(String::as_str).collect(),
        n => return Err(error(site, format_args!("{n} activations where {} are expected", per_direction * dirs))),
    };
    let mut alphas = floats(site, "activation_alpha")?.into_iter().map(f64::from);
    let mut betas = floats(site, "activation_beta")?.into_iter().map(f64::from);
    let activations = names
        .iter()
        .map(|name| {
            Activation::new(name, &mut alphas, &mut betas)
                .ok_or_else(|| error(site, format_args!("the activation `{name}` is not supported")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let activations = activations.chunks(per_direction).map(<[Activation]>::to_vec).collect();
    let clip = if super::tensors::has_attribute(site, "clip") {
        Some(f64::from(float_attribute(site, "clip", 0.0)?))
    } else {
        None
    };
    let layer = Layer {
        cell,
        seq,
        batch,
        input,
        hidden,
        x,
        w: w.values,
        r: r.values,
        b: b.map_or_else(|| filled(dirs * 2 * g, 0.0), Ok).map_err(|e| error(site, e))?,
        lens,
        h0: h0.map_or_else(|| filled(state, 0.0), Ok).map_err(|e| error(site, e))?,
        c0: c0.map_or_else(|| filled(state, 0.0), Ok).map_err(|e| error(site, e))?,
        p: p.unwrap_or_else(|| vec![0.0; dirs * 3 * hidden]),
        clip,
        linear_before_reset: int(site, "linear_before_reset", 0)? != 0,
        input_forget: int(site, "input_forget", 0)? != 0,
        activations,
        reverse,
    };
    Ok((layer, dtype, batch_first))
}

fn register_layer(registry: &mut KernelRegistry, name: &str, cell: Cell) {
    registry.add_kernel(&format!("onnx.{name}"), move |frame: &mut KernelFrame<'_>| {
        let inputs = Inputs::new(frame)?;
        let (layer, dtype, batch_first) = layer(frame, cell, &inputs)?;
        let States { y, h, c } = layer.run().map_err(|e| error(frame, e))?;
        let (seq, batch, dirs, hidden) = (layer.seq, layer.batch, layer.reverse.len(), layer.hidden);
        let (y, y_dims) = if batch_first {
            // [seq, dirs, batch, hidden] to [batch, seq, dirs, hidden].
            let mut out = Vec::with_capacity(y.len());
            for n in 0..batch {
                for t in 0..seq {
                    for d in 0..dirs {
                        out.extend_from_slice(&y[((t * dirs + d) * batch + n) * hidden..][..hidden]);
                    }
                }
            }
            (out, vec![batch, seq, dirs, hidden])
        } else {
            (y, vec![seq, dirs, batch, hidden])
        };
        let state = |values: Vec<f64>| {
            if batch_first {
                Typed { dims: vec![batch, dirs, hidden], values: swap_leading(&values, dirs, batch, hidden) }
            } else {
                Typed { dims: vec![dirs, batch, hidden], values }
            }
        };
        let mut outputs = vec![Typed { dims: y_dims, values: y }, state(h)];
        if cell == Cell::Lstm {
            outputs.push(state(c));
        }
        for (i, output) in outputs.into_iter().enumerate().take(frame.num_results()) {
            let tensor = output.into_floats(frame, dtype)?;
            frame.emplace_result(i, tensor)?;
        }
        Ok(())
    });
}

pub(super) fn register(registry: &mut KernelRegistry) {
    register_layer(registry, "RNN", Cell::Rnn);
    register_layer(registry, "GRU", Cell::Gru);
    register_layer(registry, "LSTM", Cell::Lstm);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A layer of one input feature and one hidden unit over `x` (one batch entry unless
    /// `lens` says otherwise), forward.
    fn layer(cell: Cell, x: Vec<f64>, w: Vec<f64>, r: Vec<f64>) -> Layer {
        let gates = cell.gates();
        let mut alphas = std::iter::empty();
        let mut betas = std::iter::empty();
        let activations = cell.default_activations().iter().map(|n| Activation::new(n, &mut alphas, &mut betas));
        Layer {
            cell,
            seq: x.len(),
            batch: 1,
            input: 1,
            hidden: 1,
            reverse: vec![false],
            x,
            w,
            r,
            b: vec![0.0; 2 * gates],
            lens: vec![2],
            h0: vec![0.0],
            c0: vec![0.0],
            p: vec![0.0; 3],
            clip: None,
            linear_before_reset: false,
            input_forget: false,
            activations: vec![activations.collect::<Option<Vec<_>>>().unwrap()],
        }
    }

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len(), "{a:?} and {b:?}");
        assert!(a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12), "{a:?} and {b:?}");
    }

    #[test]
    fn lstm_gates_with_peepholes_input_forget_and_clip() {
        // Gates i, o, f, c: only the cell gate sees x (weight 1) and h (weight 0.5); the
        // peepholes give i = σ(c), f = σ(0.5 c); o = σ(0) = 0.5. C0 = 1.
        let mut lstm = layer(Cell::Lstm, vec![0.5, -1.0], vec![0.0, 0.0, 0.0, 1.0], vec![0.0, 0.0, 0.0, 0.5]);
        lstm.c0 = vec![1.0];
        lstm.p = vec![1.0, 0.0, 0.5];
        // Step 1: i = σ(1), f = σ(0.5), C1 = f + i tanh(0.5) = 0.6224593 + 0.7310586 * 0.4621172,
        // H1 = 0.5 tanh(C1).
        let sigmoid = |v: f64| 1.0 / (1.0 + (-v).exp());
        let c1 = sigmoid(0.5) + sigmoid(1.0) * 0.5f64.tanh();
        let h1 = 0.5 * c1.tanh();
        let c2 = sigmoid(0.5 * c1) * c1 + sigmoid(c1) * (-1.0 + 0.5 * h1).tanh();
        let h2 = 0.5 * c2.tanh();
        let States { y, h, c } = lstm.run().unwrap();
        close(&y, &[h1, h2]);
        close(&[h1, h2], &[0.37220399863396325, 0.053527685262705654]);
        close(&h, &[h2]);
        close(&c, &[c2]);
        // input_forget: f = 1 - i.
        lstm.input_forget = true;
        let States { y, c, .. } = lstm.run().unwrap();
        close(&y, &[0.2709268781880097, -0.11683214527289787]);
        close(&c, &[-0.2380618904628996]);
        // clip bounds every gate's input to [-0.3, 0.3].
        lstm.input_forget = false;
        lstm.clip = Some(0.3);
        let States { y, c, .. } = lstm.run().unwrap();
        close(&y, &[0.3151111625948702, 0.12657255088230215]);
        close(&c, &[0.2587704157067767]);
    }

    #[test]
    fn gru_resets_before_or_after_the_recurrent_product() {
        // Gates z, r, h: z = σ(0.5 + 0.25 h0), r = σ(-0.5 + 0.5 h0), h0 = 0.5; the candidate's
        // biases 0.1 (W) and 0.3 (R).
        let mut gru = layer(Cell::Gru, vec![1.0], vec![0.5, -0.5, 1.0], vec![0.25, 0.5, -1.0]);
        gru.lens = vec![1];
        gru.h0 = vec![0.5];
        gru.b = vec![0.0, 0.0, 0.1, 0.0, 0.0, 0.3];
        let sigmoid = |v: f64| 1.0 / (1.0 + (-v).exp());
        let (z, r) = (sigmoid(0.625), sigmoid(-0.25));
        // Reset before: tanh(1 + 0.1 + R_h (r h0) + 0.3).
        let before = (1.0 - z) * (1.1 - r * 0.5 + 0.3).tanh() + z * 0.5;
        close(&gru.run().unwrap().h, &[before]);
        close(&[before], &[0.6142839415851897]);
        // linear_before_reset: tanh(1 + 0.1 + r (R_h h0 + 0.3)).
        gru.linear_before_reset = true;
        let after = (1.0 - z) * (1.1 + r * (-0.5 + 0.3)).tanh() + z * 0.5;
        close(&gru.run().unwrap().h, &[after]);
        close(&[after], &[0.5930071570740296]);
    }

    #[test]
    fn rnn_both_ways_over_sequences_of_their_own_lengths() {
        // Two batch entries (x [seq, batch]) of lengths 2 and 1; h = tanh(x + 0.5 h) each way.
        let mut rnn = layer(Cell::Rnn, vec![0.2, 0.4, 0.7, 0.0], vec![1.0, 1.0], vec![0.5, 0.5]);
        rnn.seq = 2;
        rnn.batch = 2;
        rnn.lens = vec![2, 1];
        rnn.reverse = vec![false, true];
        rnn.b = vec![0.0; 4];
        rnn.h0 = vec![0.0; 4];
        rnn.c0 = vec![0.0; 4];
        rnn.p = vec![0.0; 6];
        rnn.activations = vec![rnn.activations[0].clone(), rnn.activations[0].clone()];
        let States { y, h, .. } = rnn.run().unwrap();
        let (a, b) = (0.2f64, 0.7f64);
        let forward = [a.tanh(), (b + 0.5 * a.tanh()).tanh()];
        let backward = [(a + 0.5 * b.tanh()).tanh(), b.tanh()];
        let single = 0.4f64.tanh();
        // Y: [seq, dirs, batch, hidden]; past its length an entry's outputs are zeros.
        close(&y, &[forward[0], single, backward[0], single, forward[1], 0.0, backward[1], 0.0]);
        // Y_h: the forward pass's last state, and the backward pass's state at the start.
        close(&h, &[forward[1], single, backward[0], single]);
    }

    #[test]
    fn activations_take_their_parameters_in_order() {
        let mut alphas = [2.0, 0.1].into_iter();
        let mut betas = [3.0].into_iter();
        let affine = Activation::new("Affine", &mut alphas, &mut betas).unwrap();
        let leaky = Activation::new("LeakyRelu", &mut alphas, &mut betas).unwrap();
        let hard = Activation::new("HardSigmoid", &mut alphas, &mut betas).unwrap();
        assert_eq!(
            (affine, leaky, hard),
            (Activation::Affine(2.0, 3.0), Activation::LeakyRelu(0.1), Activation::HardSigmoid(0.2, 0.5))
        );
        assert_eq!(affine.apply(1.0), 5.0);
        assert_eq!(leaky.apply(-2.0), -0.2);
        assert!(Activation::new("Gelu", &mut alphas, &mut betas).is_none());
    }
}
