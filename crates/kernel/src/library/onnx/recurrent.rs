//! Recurrent layers: `RNN`, `GRU` and `LSTM`, forward, reverse or both ways, with ONNX's
//! activations (and their `activation_alpha`/`activation_beta`), `clip`, `sequence_lens`,
//! initial states, LSTM's peepholes and `input_forget`, GRU's `linear_before_reset`, and both
//! layouts (`layout` 0: `[seq, batch, ...]`; 1: `[batch, seq, ...]`). Every output is made: `Y`,
//! `Y_h` and LSTM's `Y_c`. f32 layers compute in f32, as onnxruntime does (at twice the vector
//! width, with branch-free sigmoid and tanh), the other float types in f64. Each time step is
//! one matrix product of every batch entry's state with `R`, then the gates, a slice at a time.

use std::ops::{Add, Div, Mul, Neg, Sub};
use std::sync::Arc;

use super::tensors::{
    element_count, error, filled, floats, integers, read_floats, string, strings, unsupported, Inputs, Typed, Value,
};
use crate::dtype::DType;
use crate::library::nn::exp;
use crate::library::nn::gemm::{self, packed_gemm, Matrix, Packed};
use crate::library::nn::{float as float_attribute, int};
use crate::tensor::DenseHostTensor;
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

/// The element type a layer computes in: f32 for f32 tensors, f64 for the other float types.
trait Real:
    Value + Packed + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self> + Neg<Output = Self>
{
    const ONE: Self;
    fn exp(self) -> Self;
    fn exp_m1(self) -> Self;
    fn ln_1p(self) -> Self;
    fn tanh(self) -> Self;
    fn sigmoid(self) -> Self;
    fn abs(self) -> Self;
    fn max(self, other: Self) -> Self;
    fn min(self, other: Self) -> Self;
    /// `out += coefficients · m`, `m` stored by [`gemm::transposed_panels`].
    fn add_panels(out: &mut [Self], coefficients: &[Self], panels: &[Self]) {
        for (values, panel) in out.chunks_mut(gemm::PANEL).zip(panels.chunks(gemm::PANEL * coefficients.len().max(1))) {
            for (row, &c) in panel.chunks_exact(values.len()).zip(coefficients) {
                for (value, &r) in values.iter_mut().zip(row) {
                    *value = *value + c * r;
                }
            }
        }
    }
    /// The logistic function and tanh of each of `values`, in place.
    fn sigmoid_all(values: &mut [Self]);
    fn tanh_all(values: &mut [Self]);
    /// The elements of the float tensor `tensor` in this type.
    fn read(site: &KernelSite<'_>, tensor: &DenseHostTensor) -> Result<Typed<Self>, KernelError>;
    /// A tensor of the float type `dtype` holding `typed`.
    fn write(typed: Typed<Self>, frame: &KernelFrame<'_>, dtype: DType) -> Result<DenseHostTensor, KernelError>;
}

impl Real for f32 {
    const ONE: f32 = 1.0;
    fn exp(self) -> f32 {
        f32::exp(self)
    }
    fn exp_m1(self) -> f32 {
        f32::exp_m1(self)
    }
    fn ln_1p(self) -> f32 {
        f32::ln_1p(self)
    }
    #[inline(always)]
    fn tanh(self) -> f32 {
        exp::tanh::<false>(self)
    }
    #[inline(always)]
    fn sigmoid(self) -> f32 {
        exp::sigmoid::<false>(self)
    }
    #[inline(always)]
    fn abs(self) -> f32 {
        f32::abs(self)
    }
    #[inline(always)]
    fn max(self, other: f32) -> f32 {
        f32::max(self, other)
    }
    #[inline(always)]
    fn min(self, other: f32) -> f32 {
        f32::min(self, other)
    }
    fn add_panels(out: &mut [f32], coefficients: &[f32], panels: &[f32]) {
        gemm::add_panels(out, coefficients, panels);
    }
    fn sigmoid_all(values: &mut [f32]) {
        exp::sigmoid_all(values);
    }
    fn tanh_all(values: &mut [f32]) {
        exp::tanh_all(values);
    }
    fn read(site: &KernelSite<'_>, tensor: &DenseHostTensor) -> Result<Typed<f32>, KernelError> {
        match tensor.dtype() {
            DType::F32 => Ok(Typed::read(tensor)),
            dtype => Err(unsupported(site, dtype)),
        }
    }
    fn write(typed: Typed<f32>, frame: &KernelFrame<'_>, dtype: DType) -> Result<DenseHostTensor, KernelError> {
        typed.into_tensor(frame, dtype)
    }
}

impl Real for f64 {
    const ONE: f64 = 1.0;
    fn exp(self) -> f64 {
        f64::exp(self)
    }
    fn exp_m1(self) -> f64 {
        f64::exp_m1(self)
    }
    fn ln_1p(self) -> f64 {
        f64::ln_1p(self)
    }
    fn tanh(self) -> f64 {
        f64::tanh(self)
    }
    fn sigmoid(self) -> f64 {
        1.0 / (1.0 + (-self).exp())
    }
    fn abs(self) -> f64 {
        f64::abs(self)
    }
    fn max(self, other: f64) -> f64 {
        f64::max(self, other)
    }
    fn min(self, other: f64) -> f64 {
        f64::min(self, other)
    }
    fn sigmoid_all(values: &mut [f64]) {
        values.iter_mut().for_each(|value| *value = value.sigmoid());
    }
    fn tanh_all(values: &mut [f64]) {
        values.iter_mut().for_each(|value| *value = value.tanh());
    }
    fn read(site: &KernelSite<'_>, tensor: &DenseHostTensor) -> Result<Typed<f64>, KernelError> {
        read_floats(site, tensor)
    }
    fn write(typed: Typed<f64>, frame: &KernelFrame<'_>, dtype: DType) -> Result<DenseHostTensor, KernelError> {
        typed.into_floats(frame, dtype)
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

    #[inline(always)]
    fn apply<T: Real>(self, x: T) -> T {
        let (zero, one, of) = (T::ZERO, T::ONE, T::from_f64);
        match self {
            Activation::Relu => x.max(zero),
            Activation::Tanh => x.tanh(),
            Activation::Sigmoid => x.sigmoid(),
            Activation::Affine(alpha, beta) => of(alpha) * x + of(beta),
            Activation::LeakyRelu(alpha) => {
                if x < zero {
                    of(alpha) * x
                } else {
                    x
                }
            }
            Activation::ThresholdedRelu(alpha) => {
                if x > of(alpha) {
                    x
                } else {
                    zero
                }
            }
            Activation::ScaledTanh(alpha, beta) => of(alpha) * (of(beta) * x).tanh(),
            Activation::HardSigmoid(alpha, beta) => (of(alpha) * x + of(beta)).max(zero).min(one),
            Activation::Elu(alpha) => {
                if x < zero {
                    of(alpha) * x.exp_m1()
                } else {
                    x
                }
            }
            Activation::Softsign => x / (one + x.abs()),
            Activation::Softplus => {
                if x > of(30.0) {
                    x
                } else {
                    x.exp().ln_1p()
                }
            }
        }
    }

    /// The activation of each of `values`, the function chosen once outside the loop (the
    /// common gates' loops then vectorize).
    fn apply_all<T: Real>(self, values: &mut [T]) {
        match self {
            Activation::Sigmoid => T::sigmoid_all(values),
            Activation::Tanh => T::tanh_all(values),
            other => {
                for value in values {
                    *value = other.apply(*value);
                }
            }
        }
    }
}

/// A recurrent layer's operands and attributes, with the sequence in `[seq, batch, ...]` order
/// (layout 0) whatever the node's layout.
struct Layer<T> {
    cell: Cell,
    seq: usize,
    batch: usize,
    input: usize,
    hidden: usize,
    /// One entry per direction: whether it runs from the sequence's end.
    reverse: Vec<bool>,
    /// `[seq, batch, input]`.
    x: Vec<T>,
    /// `W`, `R` and `R`'s panels, derived once from constant weights.
    weights: Arc<Weights<T>>,
    /// `[dirs, 2 * gates * hidden]`: `W`'s biases, then `R`'s.
    b: Vec<T>,
    /// Each batch entry's sequence length.
    lens: Vec<usize>,
    /// `[dirs, batch, hidden]`.
    h0: Vec<T>,
    c0: Vec<T>,
    /// `[dirs, 3 * hidden]`: the input, output and forget gates' peepholes.
    p: Vec<T>,
    clip: Option<f64>,
    linear_before_reset: bool,
    input_forget: bool,
    /// Each direction's activations (`f`, `g`, `h` as the cell has them).
    activations: Vec<Vec<Activation>>,
}

/// A layer's weights as its steps read them, in the layer's element type, kept from call to call
/// when they are the program's constants (laying `R` out on every call was a tenth of a small
/// LSTM's time).
struct Weights<T> {
    /// `[dirs, gates * hidden, input]`.
    w: Vec<T>,
    /// `[dirs, gates * hidden, hidden]`, which a packed GEMM reads transposed.
    r: Vec<T>,
    /// Each direction's gates' blocks of `R` (`[hidden, hidden]`) by [`gemm::transposed_panels`],
    /// one after the other: what the time steps of a small batch multiply their states by.
    panels: Vec<T>,
}

impl<T: Real> Weights<T> {
    fn new(w: Vec<T>, r: Vec<T>, hidden: usize) -> Weights<T> {
        let block = (hidden * hidden).max(1);
        let panels = r.chunks_exact(block).flat_map(|gate| gemm::transposed_panels(gate, hidden, hidden)).collect();
        Weights { w, r, panels }
    }
}

/// What a layer computes: `Y` `[seq, dirs, batch, hidden]`, `Y_h` and `Y_c` `[dirs, batch,
/// hidden]`.
struct States<T> {
    y: Vec<T>,
    h: Vec<T>,
    c: Vec<T>,
}

/// `out[i] = a[i] + b[i]`.
fn sum_into<T: Real>(out: &mut [T], a: &[T], b: &[T]) {
    for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
        *o = x + y;
    }
}

/// `out[i] += p[i] * c[i]`: a peephole.
fn add_product<T: Real>(out: &mut [T], p: &[T], c: &[T]) {
    for ((o, &x), &y) in out.iter_mut().zip(p).zip(c) {
        *o = *o + x * y;
    }
}

/// `rows x columns` of `out` (rows `columns` apart) each set to `bias` plus the row of `states`
/// (`[rows, inner]`) times the matrix `m` (element `(p, j)` at `m.1`): `states · m + bias`. A few
/// rows (a time step of a small batch) multiply `m`'s `panels` instead, where it has them (`R`'s
/// gates, each `inner` columns wide), which a packed GEMM would first copy.
fn product<T: Real>(
    out: &mut [T],
    bias: &[T],
    states: &[T],
    (m, layout, panels): (&[T], Matrix, Option<&[T]>),
    (rows, inner, columns): (usize, usize, usize),
) {
    for row in out.chunks_exact_mut(columns.max(1)) {
        row.copy_from_slice(bias);
    }
    if let Some(panels) = panels.filter(|_| rows < 4) {
        for (row, state) in out.chunks_exact_mut(columns.max(1)).zip(states.chunks_exact(inner.max(1))) {
            for (gate, panels) in row.chunks_exact_mut(inner.max(1)).zip(panels.chunks_exact((inner * inner).max(1))) {
                T::add_panels(gate, state, panels);
            }
        }
        return;
    }
    let a = Matrix { offset: 0, rows: inner, columns: 1 };
    packed_gemm((rows, inner, columns), T::ONE, (states, a), (m, layout), T::ONE, out, columns);
}

impl<T: Real> Layer<T> {
    fn run(&self) -> Result<States<T>, String> {
        let (h, batch, dirs) = (self.hidden, self.batch, self.reverse.len());
        let g = self.cell.gates() * h;
        let mut y = filled(super::tensors::count(&[self.seq, dirs, batch, h])?, T::ZERO)?;
        // Each direction's states start as the initial ones and end as Y_h and Y_c.
        let mut final_h = self.h0.clone();
        let mut final_c = self.c0.clone();
        let steps = self.lens.iter().copied().max().unwrap_or(0);
        // `R·h + Rb` of every batch entry, and a GRU's reset state and its product.
        let mut hr = filled(batch * g, T::ZERO)?;
        let mut reset = filled(batch * h, T::ZERO)?;
        let mut reset_product = filled(batch * h, T::ZERO)?;
        let mut gates = vec![T::ZERO; g];
        for (d, &reverse) in self.reverse.iter().enumerate() {
            let w = &self.weights.w[d * g * self.input..][..g * self.input];
            let r = &self.weights.r[d * g * h..][..g * h];
            let panels = &self.weights.panels[d * g * h..][..g * h];
            let (wb, rb) = self.b[d * 2 * g..][..2 * g].split_at(g);
            let p = &self.p[d * 3 * h..][..3 * h];
            let act = &self.activations[d];
            // `W·x + Wb` of every time step and batch entry at once: one GEMM, `[seq * batch, g]`.
            let rows = self.seq * batch;
            let mut xw_all = filled(super::tensors::count(&[rows, g])?, T::ZERO)?;
            let wt = Matrix { offset: 0, rows: 1, columns: self.input };
            product(&mut xw_all, wb, &self.x, (w, wt, None), (rows, self.input, g));
            // `R` read transposed, all its gates.
            let all = (r, Matrix { offset: 0, rows: 1, columns: h }, Some(panels));
            let hs = &mut final_h[d * batch * h..][..batch * h];
            let cs = &mut final_c[d * batch * h..][..batch * h];
            for step in 0..steps {
                product(&mut hr, rb, hs, all, (batch, h, g));
                let live =
                    |n: usize| (step < self.lens[n]).then(|| if reverse { self.lens[n] - 1 - step } else { step });
                if self.cell == Cell::Gru && !self.linear_before_reset {
                    // The candidate multiplies R_h by the reset state `r ⊙ h`, known only now.
                    for n in 0..batch {
                        let Some(t) = live(n) else { continue };
                        let at = (t * batch + n) * g;
                        let r_gate = &mut reset[n * h..][..h];
                        sum_into(r_gate, &xw_all[at + h..at + 2 * h], &hr[n * g + h..n * g + 2 * h]);
                        self.clip_all(r_gate);
                        act[0].apply_all(r_gate);
                        for (v, &state) in r_gate.iter_mut().zip(&hs[n * h..(n + 1) * h]) {
                            *v = *v * state;
                        }
                    }
                    let candidate = (r, Matrix { offset: 2 * h * h, ..all.1 }, Some(&panels[2 * h * h..]));
                    product(&mut reset_product, &rb[2 * h..], &reset, candidate, (batch, h, h));
                }
                for n in 0..batch {
                    let Some(t) = live(n) else { continue };
                    let xw = &xw_all[(t * batch + n) * g..][..g];
                    let hr = &hr[n * g..][..g];
                    let (hs, cs) = (&mut hs[n * h..][..h], &mut cs[n * h..][..h]);
                    match self.cell {
                        Cell::Rnn => {
                            sum_into(hs, xw, hr);
                            self.clip_all(hs);
                            act[0].apply_all(hs);
                        }
                        Cell::Gru => self.gru(act, xw, hr, &reset_product[n * h..][..h], &mut gates, hs),
                        Cell::Lstm => self.lstm(act, p, xw, hr, &mut gates, hs, cs),
                    }
                    y[((t * dirs + d) * batch + n) * h..][..h].copy_from_slice(hs);
                }
            }
        }
        Ok(States { y, h: final_h, c: final_c })
    }

    /// `clip` applied to each of `values`, when the layer has one.
    fn clip_all(&self, values: &mut [T]) {
        if let Some(clip) = self.clip {
            let (low, high) = (T::from_f64(-clip), T::from_f64(clip));
            for value in values {
                *value = value.max(low).min(high);
            }
        }
    }

    /// A GRU step of one batch entry: `hs` from `xw` (`W·x + Wb`), `hr` (`R·h + Rb`) and, when
    /// the reset comes first, `reset_product` (`R_h·(r ⊙ h) + Rb_h`). Gates z, r, h.
    fn gru(&self, act: &[Activation], xw: &[T], hr: &[T], reset_product: &[T], gates: &mut [T], hs: &mut [T]) {
        let h = self.hidden;
        let (z, rest) = gates.split_at_mut(h);
        let (r, candidate) = rest.split_at_mut(h);
        sum_into(z, &xw[..h], &hr[..h]);
        self.clip_all(z);
        act[0].apply_all(z);
        if self.linear_before_reset {
            sum_into(r, &xw[h..2 * h], &hr[h..2 * h]);
            self.clip_all(r);
            act[0].apply_all(r);
            for ((c, &x), (&gate, &recurrent)) in candidate.iter_mut().zip(&xw[2 * h..]).zip(r.iter().zip(&hr[2 * h..]))
            {
                *c = x + gate * recurrent;
            }
        } else {
            sum_into(candidate, &xw[2 * h..], reset_product);
        }
        self.clip_all(candidate);
        act[1].apply_all(candidate);
        for ((state, &z), &c) in hs.iter_mut().zip(z.iter()).zip(candidate.iter()) {
            *state = (T::ONE - z) * c + z * *state;
        }
    }

    /// An LSTM step of one batch entry: `hs` and the cell state `cs` from `xw` and `hr`. Gates
    /// in W: input, output, forget, cell; peepholes: input, output, forget.
    #[allow(clippy::too_many_arguments)]
    fn lstm(&self, act: &[Activation], p: &[T], xw: &[T], hr: &[T], gates: &mut [T], hs: &mut [T], cs: &mut [T]) {
        let h = self.hidden;
        sum_into(gates, xw, hr);
        let (i, rest) = gates.split_at_mut(h);
        let (o, rest) = rest.split_at_mut(h);
        let (f, c) = rest.split_at_mut(h);
        add_product(i, &p[..h], cs);
        self.clip_all(i);
        act[0].apply_all(i);
        if self.input_forget {
            for (f, &i) in f.iter_mut().zip(i.iter()) {
                *f = T::ONE - i;
            }
        } else {
            add_product(f, &p[2 * h..], cs);
            self.clip_all(f);
            act[0].apply_all(f);
        }
        self.clip_all(c);
        act[1].apply_all(c);
        for (((state, &f), &i), &c) in cs.iter_mut().zip(f.iter()).zip(i.iter()).zip(c.iter()) {
            *state = f * *state + i * c;
        }
        add_product(o, &p[h..2 * h], cs);
        self.clip_all(o);
        act[0].apply_all(o);
        // The cell gate's values are spent: they take h(C).
        c.copy_from_slice(cs);
        act[2].apply_all(c);
        for ((state, &o), &c) in hs.iter_mut().zip(o.iter()).zip(c.iter()) {
            *state = o * c;
        }
    }
}

/// `values` of a tensor `[a, b, rest]` with its first two axes swapped.
fn swap_leading<T: Copy>(values: &[T], a: usize, b: usize, rest: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(values.len());
    for j in 0..b {
        for i in 0..a {
            out.extend_from_slice(&values[(i * b + j) * rest..][..rest]);
        }
    }
    out
}

/// Input `index` when the node has it, checked to be of `dims` (`what` names it in errors).
fn optional_input<T: Real>(
    site: &KernelSite<'_>,
    inputs: &Inputs,
    index: usize,
    what: &str,
    dims: &[usize],
) -> Result<Option<Vec<T>>, KernelError> {
    let Some(tensor) = inputs.optional(index) else { return Ok(None) };
    let typed = T::read(site, tensor)?;
    if typed.dims != dims {
        return Err(error(site, format_args!("{what} has the shape {:?}, not {dims:?}", typed.dims)));
    }
    Ok(Some(typed.values))
}

fn layer<T: Real>(site: &KernelSite<'_>, cell: Cell, inputs: &Inputs) -> Result<(Layer<T>, bool), KernelError> {
    let x = T::read(site, inputs.required(0)?)?;
    let (w_tensor, r_tensor) = (inputs.required(1)?, inputs.required(2)?);
    let dims_of = |tensor: &DenseHostTensor| -> Vec<usize> {
        tensor.shape().dims().iter().map(|&d| usize::try_from(d).unwrap_or(0)).collect()
    };
    let (w_dims, r_dims) = (dims_of(w_tensor), dims_of(r_tensor));
    for (what, dims) in [("X", &x.dims), ("W", &w_dims), ("R", &r_dims)] {
        if dims.len() != 3 {
            return Err(error(site, format_args!("{what} has the shape {dims:?}, not three dimensions")));
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
        -1 => r_dims[2],
        h => usize::try_from(h).map_err(|_| error(site, format_args!("hidden_size {h} is negative")))?,
    };
    let g = cell
        .gates()
        .checked_mul(hidden)
        .ok_or_else(|| error(site, format_args!("hidden_size {hidden} is too large")))?;
    if w_dims != [dirs, g, input] {
        return Err(error(site, format_args!("W has the shape {w_dims:?}, not {:?}", [dirs, g, input])));
    }
    if r_dims != [dirs, g, hidden] {
        return Err(error(site, format_args!("R has the shape {r_dims:?}, not {:?}", [dirs, g, hidden])));
    }
    let weights = site.derived(&[w_tensor, r_tensor], "recurrent weights", || {
        Ok(Weights::new(T::read(site, w_tensor)?.values, T::read(site, r_tensor)?.values, hidden))
    })?;
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
    let from_layout = |values: Vec<T>| if batch_first { swap_leading(&values, batch, dirs, hidden) } else { values };
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
        weights,
        b: b.map_or_else(|| filled(dirs * 2 * g, T::ZERO), Ok).map_err(|e| error(site, e))?,
        lens,
        h0: h0.map_or_else(|| filled(state, T::ZERO), Ok).map_err(|e| error(site, e))?,
        c0: c0.map_or_else(|| filled(state, T::ZERO), Ok).map_err(|e| error(site, e))?,
        p: p.unwrap_or_else(|| vec![T::ZERO; dirs * 3 * hidden]),
        clip,
        linear_before_reset: int(site, "linear_before_reset", 0)? != 0,
        input_forget: int(site, "input_forget", 0)? != 0,
        activations,
        reverse,
    };
    Ok((layer, batch_first))
}

fn register_layer(registry: &mut KernelRegistry, name: &str, cell: Cell) {
    registry.add_kernel(&format!("onnx.{name}"), move |frame: &mut KernelFrame<'_>| {
        let inputs = Inputs::new(frame)?;
        match inputs.required(0)?.dtype() {
            DType::F32 => compute::<f32>(frame, cell, &inputs),
            _ => compute::<f64>(frame, cell, &inputs),
        }
    });
}

/// Runs the layer in `T` and emplaces its results, of X's element type.
fn compute<T: Real>(frame: &mut KernelFrame<'_>, cell: Cell, inputs: &Inputs) -> Result<(), KernelError> {
    let dtype = inputs.required(0)?.dtype();
    let (layer, batch_first) = layer::<T>(frame, cell, inputs)?;
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
    let state = |values: Vec<T>| {
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
        let tensor = T::write(output, frame, dtype)?;
        frame.emplace_result(i, tensor)?;
    }
    Ok(())
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
    fn layer(cell: Cell, x: Vec<f64>, w: Vec<f64>, r: Vec<f64>) -> Layer<f64> {
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
            weights: Arc::new(Weights::new(w, r, 1)),
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
        assert_eq!(affine.apply(1.0f64), 5.0);
        assert_eq!(leaky.apply(-2.0f64), -0.2);
        assert!(Activation::new("Gelu", &mut alphas, &mut betas).is_none());
    }

    /// A layer of `batch` entries over 3 steps, 4 inputs and 70 hidden units (a block of 64
    /// columns and a tail), with weights from a fixed sequence, in `T`.
    fn wide<T: Real>(cell: Cell, batch: usize, linear_before_reset: bool) -> Layer<T> {
        let (seq, input, hidden) = (3, 4, 70);
        let g = cell.gates() * hidden;
        let values = |count: usize, seed: usize| -> Vec<T> {
            (0..count)
                .map(|i| T::from_f64((((i * 7919 + seed * 104_729) % 1000) as f64 / 1000.0 - 0.5) * 0.6))
                .collect()
        };
        let activations = cell
            .default_activations()
            .iter()
            .map(|n| Activation::new(n, &mut std::iter::empty(), &mut std::iter::empty()).unwrap());
        Layer {
            cell,
            seq,
            batch,
            input,
            hidden,
            reverse: vec![true],
            x: values(seq * batch * input, 1),
            weights: Arc::new(Weights::new(values(g * input, 2), values(g * hidden, 3), hidden)),
            b: values(2 * g, 4),
            lens: (0..batch).map(|n| seq - n % 2).collect(),
            h0: values(batch * hidden, 5),
            c0: values(batch * hidden, 6),
            p: values(3 * hidden, 7),
            clip: Some(0.9),
            linear_before_reset,
            input_forget: false,
            activations: vec![activations.collect()],
        }
    }

    /// The f32 layers (dot products of a few rows, a packed GEMM of more, branch-free sigmoid
    /// and tanh) agree with the f64 ones.
    #[test]
    fn f32_layers_agree_with_f64_for_few_and_many_rows() {
        for (cell, linear_before_reset) in
            [(Cell::Lstm, false), (Cell::Gru, false), (Cell::Gru, true), (Cell::Rnn, false)]
        {
            for batch in [1, 5] {
                let narrow = wide::<f32>(cell, batch, linear_before_reset).run().unwrap();
                let exact = wide::<f64>(cell, batch, linear_before_reset).run().unwrap();
                for (name, ours, truth) in
                    [("Y", &narrow.y, &exact.y), ("Y_h", &narrow.h, &exact.h), ("Y_c", &narrow.c, &exact.c)]
                {
                    assert_eq!(ours.len(), truth.len());
                    for (k, (&a, &b)) in ours.iter().zip(truth.iter()).enumerate() {
                        assert!(
                            (f64::from(a) - b).abs() <= 2e-5,
                            "{cell:?} batch {batch} {name}[{k}]: {a} against {b}"
                        );
                    }
                }
            }
        }
    }
}
