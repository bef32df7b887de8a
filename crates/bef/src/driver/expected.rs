//! `expected-error` comments: TFRT's driver checks the runtime errors it reports against the
//! `// expected-error {{text}}` comments of the MLIR file they point into (`@+N` / `@-N` for a
//! line below or above the comment), as MLIR's diagnostic verifier does. An expected error is
//! consumed silently; anything else is printed, and either way verification then fails.

use std::collections::HashMap;

use rtx_host::Diagnostic;

/// One expected error: its line (1-based) and the text its message must contain.
struct Expected {
    line: u32,
    text: String,
    seen: bool,
}

/// The expectations of every source file a diagnostic pointed into.
#[derive(Default)]
pub struct ExpectedDiagnostics {
    files: HashMap<String, Vec<Expected>>,
    failed: bool,
}

impl ExpectedDiagnostics {
    /// Consumes `message` (the full text, `runtime error: ...`) when expected at `diagnostic`'s
    /// location; otherwise returns the line to print on standard error.
    pub fn check(&mut self, diagnostic: &Diagnostic, message: &str) -> Option<String> {
        let Some(location) = diagnostic.location.as_ref().filter(|l| l.line > 0) else {
            self.failed = true;
            return Some(format!("<unknown>:0: error: {message}"));
        };
        let expected = self
            .files
            .entry(location.file.clone())
            .or_insert_with(|| std::fs::read_to_string(&location.file).map(|text| parse(&text)).unwrap_or_default());
        if let Some(hit) = expected.iter_mut().find(|e| !e.seen && e.line == location.line && message.contains(&e.text))
        {
            hit.seen = true;
            return None;
        }
        self.failed = true;
        let prefix = if expected.is_empty() { "" } else { "unexpected error: " };
        Some(format!("{location}: error: {prefix}{message}"))
    }

    /// Whether every diagnostic was expected and every expectation met; prints the unmet ones.
    pub fn verify(&self, report: &mut dyn FnMut(String)) -> bool {
        let mut ok = !self.failed;
        for (file, expected) in &self.files {
            for e in expected.iter().filter(|e| !e.seen) {
                report(format!("{file}:{}: error: expected error \"{}\" was not produced", e.line, e.text));
                ok = false;
            }
        }
        ok
    }
}

/// Every `expected-error [@+N|@-N] {{text}}` comment of `source`.
fn parse(source: &str) -> Vec<Expected> {
    let mut expected = Vec::new();
    for (index, line) in source.lines().enumerate() {
        let Some(at) = line.find("expected-error") else { continue };
        let rest = line[at + "expected-error".len()..].trim_start();
        let (offset, rest) = match rest.strip_prefix('@') {
            Some(spec) => {
                let end = spec.find(|c: char| c.is_whitespace() || c == '{').unwrap_or(spec.len());
                let offset: i64 = spec[..end].trim_start_matches('+').parse().unwrap_or(0);
                (offset, spec[end..].trim_start())
            }
            None => (0, rest),
        };
        let Some(text) = rest.strip_prefix("{{").and_then(|r| r.split_once("}}")).map(|(t, _)| t) else { continue };
        let line = (index as i64 + 1 + offset).max(1) as u32;
        expected.push(Expected { line, text: text.to_owned(), seen: false });
    }
    expected
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtx_host::{Location, StatusCode};

    #[test]
    fn expected_errors_are_consumed_and_others_reported() {
        let dir = std::env::temp_dir().join(format!("rtx-expected-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.mlir");
        std::fs::write(
            &path,
            "a\n// expected-error @+1 {{runtime error: Divide by zero}}\nb\nc // expected-error {{boom}}\n",
        )
        .unwrap();
        let file = path.display().to_string();
        let at = |line| Diagnostic::new(StatusCode::Internal, "x").with_location(Location::new(file.clone(), line, 5));
        let mut expected = ExpectedDiagnostics::default();
        assert_eq!(expected.check(&at(3), "runtime error: Divide by zero"), None);
        let mut reports = Vec::new();
        assert!(!expected.verify(&mut |r| reports.push(r)), "the error on line 4 never came");
        assert_eq!(reports, [format!("{file}:4: error: expected error \"boom\" was not produced")]);
        let unexpected = expected.check(&at(3), "runtime error: other").unwrap();
        assert_eq!(unexpected, format!("{file}:3:5: error: unexpected error: runtime error: other"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
