//! The `nn.*` kernels against numpy: each case of `tests/fixtures/nn/cases.txt` (written by
//! `generate.py` beside it) runs one kernel in a BEF function on operands made from seeds, on
//! the single-threaded queue and on a pool (where large kernels split into tasks), and its
//! result must match numpy's within 1e-4 of the result's scale. Hand-worked cases and error
//! messages are in `tests/lit/bef_exec/nn_kernels.mlir`.

use rtx_bef::format::DType;
use rtx_bef::{mlir_to_bef, WriteOptions};
use rtx_host::{AsyncValueRef, RcAsyncValue};
use rtx_kernel::tensor::{DenseHostTensor, TensorShape};
use rtx_mlir::{parse_text_with, ParseOptions};
use rtx_runtime::{Context, ContextOptions, Module, Runtime};

/// An operand line: `operand SEED SCALE OFFSET DIMS...`.
struct Operand {
    seed: u32,
    scale: f32,
    offset: f32,
    dims: Vec<i64>,
}

struct Case {
    name: String,
    kernel: String,
    attributes: String,
    operands: Vec<Operand>,
    dims: Vec<i64>,
    expect: Vec<f64>,
}

fn numbers<T: std::str::FromStr>(text: &str) -> Vec<T>
where
    T::Err: std::fmt::Debug,
{
    text.split_whitespace().map(|word| word.parse().unwrap()).collect()
}

fn cases() -> Vec<Case> {
    let text = include_str!("../../../../tests/fixtures/nn/cases.txt");
    let mut cases: Vec<Case> = Vec::new();
    let mut lines = text.lines().filter(|line| !line.starts_with('#'));
    while let Some(line) = lines.next() {
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        match word {
            "case" => cases.push(Case {
                name: rest.to_owned(),
                kernel: String::new(),
                attributes: String::new(),
                operands: Vec::new(),
                dims: Vec::new(),
                expect: Vec::new(),
            }),
            "kernel" => cases.last_mut().unwrap().kernel = rest.to_owned(),
            "attributes" => cases.last_mut().unwrap().attributes = rest.to_owned(),
            "operand" => {
                let words: Vec<&str> = rest.split_whitespace().collect();
                cases.last_mut().unwrap().operands.push(Operand {
                    seed: words[0].parse().unwrap(),
                    scale: words[1].parse().unwrap(),
                    offset: words[2].parse().unwrap(),
                    dims: words[3..].iter().map(|d| d.parse().unwrap()).collect(),
                });
            }
            "expect" => {
                let case = cases.last_mut().unwrap();
                case.dims = numbers(rest);
                case.expect = numbers(lines.next().unwrap());
            }
            _ => panic!("unexpected fixture line {line:?}"),
        }
    }
    cases
}

/// generate.py's operand: a 32-bit LCG's top 24 bits as u in [-1, 1), then u * scale + offset.
fn values(operand: &Operand) -> Vec<f32> {
    let count: i64 = operand.dims.iter().product();
    let mut state = operand.seed;
    (0..count)
        .map(|_| {
            state = state.wrapping_mul(1664525).wrapping_add(1013904223);
            let u = (state >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0;
            u * operand.scale + operand.offset
        })
        .collect()
}

/// `@run`: the case's kernel on the function's arguments.
fn program(case: &Case) -> Vec<u8> {
    let tensor = "!tfrt_tensor.tensor";
    let arguments: Vec<String> = (0..case.operands.len()).map(|i| format!("%a{i}")).collect();
    let types = vec![tensor; case.operands.len()].join(", ");
    let text = format!(
        "func.func @run({}) -> {tensor} {{\n  %y = \"{}\"({}) {} : ({types}) -> {tensor}\n  tfrt.return %y : {tensor}\n}}\n",
        arguments.iter().map(|a| format!("{a}: {tensor}")).collect::<Vec<_>>().join(", "),
        case.kernel,
        arguments.join(", "),
        case.attributes,
    );
    let parse = ParseOptions { file_name: Some(format!("{}.mlir", case.name)), ..ParseOptions::default() };
    mlir_to_bef(&parse_text_with(&text, &parse).unwrap(), &WriteOptions::default()).unwrap()
}

fn run(context: &Context, case: &Case) -> DenseHostTensor {
    context.add_module(&Module::load_memory(&program(case)).unwrap()).unwrap();
    let arguments: Vec<RcAsyncValue> = case
        .operands
        .iter()
        .map(|operand| {
            let bytes: Vec<u8> = values(operand).iter().flat_map(|v| v.to_le_bytes()).collect();
            let shape = TensorShape::new(operand.dims.clone()).unwrap();
            let tensor = DenseHostTensor::from_bytes(context.host(), DType::F32, shape, &bytes).unwrap();
            AsyncValueRef::available(tensor).into_untyped()
        })
        .collect();
    let results = context.invoke(&context.function("run").unwrap(), &arguments).unwrap();
    context.await_values(&results).unwrap();
    match results[0].try_get::<DenseHostTensor>() {
        Ok(tensor) => tensor.clone(),
        Err(error) => panic!("{}: {error:?}", case.name),
    }
}

fn check_on(spec: &str) {
    let cases = cases();
    assert!(cases.len() > 30, "the fixture holds every case");
    for case in &cases {
        let context = Runtime::new().context_with(ContextOptions::from_spec(spec).unwrap()).unwrap();
        let result = run(&context, case);
        assert_eq!(result.shape().dims(), &case.dims[..], "{}: shape", case.name);
        let got = result.values::<f32>().unwrap();
        // The result's scale: its root mean square, so near-zero elements of a sum of many
        // terms are held to the accuracy of the sum, not of themselves.
        let scale = (case.expect.iter().map(|v| v * v).sum::<f64>() / case.expect.len().max(1) as f64).sqrt();
        for (i, (&got, &want)) in got.iter().zip(&case.expect).enumerate() {
            let tolerance = 1e-4 * (want.abs() + scale).max(1e-6);
            assert!(
                (f64::from(got) - want).abs() <= tolerance,
                "{} on {spec}: element {i} is {got}, numpy's {want}",
                case.name
            );
        }
    }
}

#[test]
fn kernels_match_numpy_on_one_thread() {
    check_on("s");
}

#[test]
fn kernels_match_numpy_split_over_a_pool() {
    check_on("mstd:4");
}
