//! Test-only: assembles small BEF files from a description of their functions, computing what
//! a writer derives (use counts, user lists, the pseudo kernel, string offsets, framing), so
//! reader and executor tests state only the program.

use crate::format::{
    vbr, FunctionKind, SectionId, MAGIC, PADDING, PSEUDO_KERNEL_CODE, PSEUDO_KERNEL_LOCATION, VERSION,
};

/// An attribute's bytes and the alignment it needs.
#[derive(Clone)]
pub(crate) struct TestAttribute {
    pub bytes: Vec<u8>,
    pub align: usize,
}

impl TestAttribute {
    pub fn i32(value: i32) -> TestAttribute {
        TestAttribute { bytes: value.to_le_bytes().to_vec(), align: 4 }
    }
    pub fn i64(value: i64) -> TestAttribute {
        TestAttribute { bytes: value.to_le_bytes().to_vec(), align: 8 }
    }
    pub fn string(value: &str) -> TestAttribute {
        let mut bytes = (value.len() as u32).to_le_bytes().to_vec();
        bytes.extend(value.as_bytes());
        TestAttribute { bytes, align: 4 }
    }
}

/// One kernel: its name, operand and result registers, attributes, function indices, stream.
#[derive(Clone)]
pub(crate) struct TestKernel {
    pub name: &'static str,
    pub arguments: Vec<u32>,
    pub results: Vec<u32>,
    pub attributes: Vec<TestAttribute>,
    pub functions: Vec<u32>,
    pub stream: u32,
}

/// `name(arguments) -> results` with no attributes, in stream 0.
pub(crate) fn kernel(name: &'static str, arguments: &[u32], results: &[u32]) -> TestKernel {
    TestKernel {
        name,
        arguments: arguments.to_vec(),
        results: results.to_vec(),
        attributes: Vec::new(),
        functions: Vec::new(),
        stream: 0,
    }
}

impl TestKernel {
    pub fn attribute(mut self, attribute: TestAttribute) -> TestKernel {
        self.attributes.push(attribute);
        self
    }
    pub fn function(mut self, index: u32) -> TestKernel {
        self.functions.push(index);
        self
    }
    pub fn stream(mut self, stream: u32) -> TestKernel {
        self.stream = stream;
        self
    }
}

/// A function: registers `0..arguments.len()` are its arguments; the kernels' results number
/// the others. Each kernel is located at `test.mlir:<its position + 2>:3`.
#[derive(Clone)]
pub(crate) struct TestFunction {
    pub name: &'static str,
    pub kind: FunctionKind,
    pub arguments: Vec<&'static str>,
    pub results: Vec<&'static str>,
    pub kernels: Vec<TestKernel>,
    pub returns: Vec<u32>,
}

pub(crate) fn function(name: &'static str, arguments: &[&'static str], results: &[&'static str]) -> TestFunction {
    TestFunction {
        name,
        kind: FunctionKind::Async,
        arguments: arguments.to_vec(),
        results: results.to_vec(),
        kernels: Vec::new(),
        returns: Vec::new(),
    }
}

impl TestFunction {
    pub fn kind(mut self, kind: FunctionKind) -> TestFunction {
        self.kind = kind;
        self
    }
    pub fn kernel(mut self, kernel: TestKernel) -> TestFunction {
        self.kernels.push(kernel);
        self
    }
    pub fn returns(mut self, registers: &[u32]) -> TestFunction {
        self.returns = registers.to_vec();
        self
    }
}

/// The bytes of a BEF file holding `functions`.
pub(crate) fn assemble(functions: &[TestFunction]) -> Vec<u8> {
    let mut names: Vec<&str> = vec![""];
    for f in functions {
        names.push(f.name);
        names.extend(f.arguments.iter().chain(&f.results));
        names.extend(f.kernels.iter().map(|k| k.name));
    }
    names.sort_unstable();
    names.dedup();
    let mut strings = Vec::new();
    let mut string_offset = std::collections::HashMap::new();
    for name in &names {
        string_offset.insert(*name, strings.len() as u64);
        strings.extend(name.as_bytes());
        strings.push(0);
    }
    let first_seen = |items: &mut Vec<&'static str>, item: &'static str| match items.iter().position(|&i| i == item) {
        Some(i) => i as u32,
        None => {
            items.push(item);
            items.len() as u32 - 1
        }
    };
    let (mut kernel_names, mut type_names) = (Vec::new(), Vec::new());
    for f in functions {
        for t in f.arguments.iter().chain(&f.results) {
            first_seen(&mut type_names, t);
        }
        for k in &f.kernels {
            first_seen(&mut kernel_names, k.name);
        }
    }
    let name_table = |items: &[&str]| {
        let mut out = Vec::new();
        vbr::write(&mut out, items.len() as u64);
        for item in items {
            vbr::write(&mut out, string_offset[item]);
        }
        out
    };

    let mut attributes = Vec::new();
    let location_strings = b"test.mlir\0".to_vec();
    let mut locations = vec![1, 0, 1, 1]; // functions: test.mlir:1:1
    let mut bodies = Vec::new();
    let mut index = Vec::new();
    vbr::write(&mut index, functions.len() as u64);
    for f in functions {
        index.push(f.kind as u8);
        vbr::write(&mut index, bodies.len() as u64);
        vbr::write(&mut index, string_offset[f.name]);
        for types in [&f.arguments, &f.results] {
            vbr::write(&mut index, types.len() as u64);
            for t in types.iter() {
                let position = type_names.iter().position(|n| n == t).unwrap();
                vbr::write(&mut index, position as u64);
            }
        }
        if f.kind != FunctionKind::Native {
            bodies.extend(function_body(f, &kernel_names, &mut attributes, &mut locations, bodies.len()));
        }
    }

    let mut file = MAGIC.to_vec();
    file.push(VERSION);
    section(&mut file, SectionId::Strings, &strings);
    section(&mut file, SectionId::Attributes, &attributes);
    section(&mut file, SectionId::Kernels, &name_table(&kernel_names));
    section(&mut file, SectionId::Types, &name_table(&type_names));
    section(&mut file, SectionId::FunctionIndex, &index);
    section(&mut file, SectionId::Functions, &bodies);
    section(&mut file, SectionId::LocationStrings, &location_strings);
    section(&mut file, SectionId::Locations, &locations);
    file
}

/// Appends a section, aligned as the format asks (always with the alignment byte when > 1).
pub(crate) fn section(file: &mut Vec<u8>, id: SectionId, body: &[u8]) {
    file.push(id as u8);
    let align = id.alignment();
    vbr::write(file, ((body.len() as u64) << 1) | u64::from(align > 1));
    if align > 1 {
        file.push(align as u8);
        while !file.len().is_multiple_of(align) {
            file.push(PADDING);
        }
    }
    file.extend(body);
}

fn function_body(
    f: &TestFunction,
    kernel_names: &[&str],
    attributes: &mut Vec<u8>,
    locations: &mut Vec<u8>,
    start: usize,
) -> Vec<u8> {
    let num_registers = f.arguments.len() as u32 + f.kernels.iter().map(|k| k.results.len() as u32).sum::<u32>();
    let pseudo_register = num_registers;
    let mut uses = vec![0u64; num_registers as usize];
    for r in f.kernels.iter().flat_map(|k| &k.arguments).chain(&f.returns) {
        uses[*r as usize] += 1;
    }
    // Users of each register, kernel ids counted with the pseudo kernel as 0.
    let mut users: Vec<Vec<u32>> = vec![Vec::new(); num_registers as usize + 1];
    for (i, k) in f.kernels.iter().enumerate() {
        if k.arguments.is_empty() {
            users[pseudo_register as usize].push(i as u32 + 1);
        }
        for &r in &k.arguments {
            users[r as usize].push(i as u32 + 1);
        }
    }
    let mut records: Vec<Vec<u32>> = Vec::new();
    let mut pseudo_results = vec![pseudo_register];
    pseudo_results.extend(0..f.arguments.len() as u32);
    let mut pseudo = vec![PSEUDO_KERNEL_CODE, PSEUDO_KERNEL_LOCATION, 0, 0, 0, pseudo_results.len() as u32];
    pseudo.extend(pseudo_results.iter().map(|&r| users[r as usize].len() as u32));
    pseudo.extend(&pseudo_results);
    pseudo.extend(pseudo_results.iter().flat_map(|&r| users[r as usize].clone()));
    records.push(pseudo);
    for (i, k) in f.kernels.iter().enumerate() {
        let location = locations.len() as u32;
        locations.extend([1, 0, i as u8 + 2, 3]);
        let code = kernel_names.iter().position(|&n| n == k.name).unwrap() as u32;
        let mut record = vec![
            code,
            location,
            k.arguments.len() as u32,
            k.attributes.len() as u32,
            k.functions.len() as u32,
            k.results.len() as u32,
        ];
        record.extend(k.results.iter().map(|&r| users[r as usize].len() as u32));
        record.extend(&k.arguments);
        for attribute in &k.attributes {
            while !attributes.len().is_multiple_of(attribute.align) {
                attributes.push(PADDING);
            }
            record.push(attributes.len() as u32);
            attributes.extend(&attribute.bytes);
        }
        record.extend(&k.functions);
        record.extend(&k.results);
        record.extend(k.results.iter().flat_map(|&r| users[r as usize].clone()));
        records.push(record);
    }
    let mut body = Vec::new();
    vbr::write(&mut body, 0);
    vbr::write(&mut body, u64::from(num_registers));
    for &u in &uses {
        vbr::write(&mut body, u);
    }
    vbr::write(&mut body, records.len() as u64);
    let mut offset = 0;
    for (i, record) in records.iter().enumerate() {
        let (operands, stream) = match i {
            0 => (0, 0),
            _ => (f.kernels[i - 1].arguments.len(), f.kernels[i - 1].stream),
        };
        vbr::write(&mut body, offset as u64);
        vbr::write(&mut body, operands as u64);
        vbr::write(&mut body, u64::from(stream));
        offset += record.len() * 4;
    }
    for &r in &f.returns {
        vbr::write(&mut body, u64::from(r));
    }
    while !(start + body.len()).is_multiple_of(4) {
        body.push(PADDING);
    }
    for word in records.iter().flatten() {
        body.extend(word.to_le_bytes());
    }
    body
}
