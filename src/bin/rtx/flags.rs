//! Command lines as IREE's tools take them, and numbers as IREE's flag library reads them.

use rtx::vm::abi::ValueKind;
use rtx::vm::value::Value;

/// Flags as IREE's tools take them: `--name=value`, repeatable, plus bare positional arguments.
pub struct Flags {
    pairs: Vec<(String, String)>,
    pub positional: Vec<String>,
}

impl Flags {
    pub fn parse(arguments: impl Iterator<Item = String>) -> Flags {
        let mut flags = Flags { pairs: Vec::new(), positional: Vec::new() };
        for argument in arguments {
            match argument.strip_prefix("--") {
                Some(flag) => {
                    let (name, value) = flag.split_once('=').unwrap_or((flag, ""));
                    flags.pairs.push((name.replace('-', "_"), value.to_owned()));
                }
                None => flags.positional.push(argument),
            }
        }
        flags
    }

    /// The same flags with LLVM's one-dash spelling (`-bef-to-mlir`) read as a flag too, as
    /// TFRT's and MLIR's tools take it; `-` (stdin) and `-o FILE` stay positional.
    pub fn llvm_style(&self) -> Flags {
        let mut arguments = Vec::with_capacity(self.positional.len());
        let mut positional = self.positional.iter();
        while let Some(argument) = positional.next() {
            if argument == "-o" {
                arguments.push(argument.clone());
                arguments.extend(positional.next().cloned());
            } else if argument.len() > 1 && argument.starts_with('-') {
                arguments.push(format!("-{argument}"));
            } else {
                arguments.push(argument.clone());
            }
        }
        let mut flags = Flags::parse(arguments.into_iter());
        flags.pairs.splice(0..0, self.pairs.iter().cloned());
        flags
    }

    pub fn all(&self, name: &str) -> Vec<&str> {
        self.pairs.iter().filter(|(n, _)| n == name).map(|(_, v)| v.as_str()).collect()
    }

    pub fn last(&self, name: &str) -> Option<&str> {
        self.all(name).last().copied()
    }

    pub fn has(&self, name: &str) -> bool {
        self.pairs.iter().any(|(n, _)| n == name)
    }

    /// Whether `--help` (or `-h`) was given.
    pub fn wants_help(&self) -> bool {
        self.has("help") || self.positional.iter().any(|p| p == "-h")
    }

    /// Rejects flags the command does not know, so a typo is not silently ignored.
    pub fn only(&self, known: &[&str]) -> Result<(), String> {
        match self.pairs.iter().find(|(n, _)| !known.contains(&n.as_str())) {
            Some((name, _)) => Err(format!("unknown flag `--{name}`")),
            None => Ok(()),
        }
    }
}

/// C's `atoi` as IREE's flags use it for int32 values: leading blanks, a sign, decimal digits.
pub fn c_atoi(text: &str) -> i32 {
    let text = text.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let magnitude = digits
        .bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0i64, |value, digit| value.saturating_mul(10).saturating_add(i64::from(digit - b'0')));
    (if negative { -magnitude } else { magnitude }) as i32
}

/// C's `atof` (`strtod` with its hex, `inf` and `nan` forms; 0 when nothing parses).
pub fn c_atof(text: &str) -> f64 {
    match rtx::vm::function_io::parse_scalar(text, ValueKind::F64) {
        Ok(Value::F64(value)) => value,
        _ => 0.0,
    }
}
