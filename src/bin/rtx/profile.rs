//! `rtx profile FILE.json`: a trace summed up — for each category of span (BEF kernels, VM
//! calls, dispatches), the names that took the most time: how many spans, their total and mean
//! time, and their share of the category's total. Reads any Chrome trace-event JSON (complete
//! `X` events, and `B`/`E` pairs per thread), not only rtx's.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use serde_json::Value;

use crate::flags::Flags;

/// Rows shown per category.
const TOP: usize = 20;

/// The section of the kernels named after ONNX nodes, summed by their kernel.
const BY_KERNEL: &str = "kernel (by kernel)";

pub fn profile(flags: &Flags) -> Result<ExitCode, String> {
    flags.only(&[])?;
    let [path] = flags.positional.as_slice() else {
        return Err(format!("expected one trace file\n{}", crate::usage::PROFILE));
    };
    // A reader that went away early (`| head`) is not a failure of the command.
    let _ = write!(std::io::stdout(), "{}", summary(Path::new(path))?);
    Ok(ExitCode::SUCCESS)
}

/// The table of the trace in the file at `path`.
pub fn summary(path: &Path) -> Result<String, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|error| format!("cannot read {shown}: {error}"))?;
    Ok(table(&spans(&text).map_err(|error| format!("{shown}: {error}"))?))
}

/// A span: category, name, duration in microseconds.
type Span = (String, String, f64);

/// The spans of a trace: its complete events, and its begin/end pairs matched per thread.
fn spans(text: &str) -> Result<Vec<Span>, String> {
    let json: Value = serde_json::from_str(text).map_err(|error| format!("not JSON: {error}"))?;
    // The JSON object format holds the events in `traceEvents`; the array format is the events.
    let events = match &json {
        Value::Array(events) => events,
        Value::Object(object) => match object.get("traceEvents") {
            Some(Value::Array(events)) => events,
            _ => return Err("no `traceEvents` array: not a trace-event file".to_owned()),
        },
        _ => return Err("neither an object nor an array of trace events".to_owned()),
    };
    let mut spans = Vec::new();
    // Per thread (pid, tid), the begin events not yet ended: category, name, start.
    let mut open: HashMap<(String, String), Vec<Span>> = HashMap::new();
    for (index, event) in events.iter().enumerate() {
        let field = |key: &str| event.get(key);
        let text = |key: &str| field(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        let number = |key: &str| field(key).and_then(Value::as_f64);
        let thread = (
            field("pid").map(Value::to_string).unwrap_or_default(),
            field("tid").map(Value::to_string).unwrap_or_default(),
        );
        match field("ph").and_then(Value::as_str) {
            Some("X") => {
                let duration = number("dur").ok_or_else(|| format!("event {index}: a complete event without `dur`"))?;
                // A kernel named after the ONNX node it came from counts for its kernel too.
                let kernel = field("args").and_then(|args| args.get("kernel")).and_then(Value::as_str);
                if let (Some(kernel), "kernel") = (kernel, text("cat").as_str()) {
                    spans.push((BY_KERNEL.to_owned(), kernel.to_owned(), duration));
                }
                spans.push((text("cat"), text("name"), duration));
            }
            Some("B") => {
                let start = number("ts").ok_or_else(|| format!("event {index}: a begin event without `ts`"))?;
                open.entry(thread).or_default().push((text("cat"), text("name"), start));
            }
            Some("E") => {
                let end = number("ts").ok_or_else(|| format!("event {index}: an end event without `ts`"))?;
                let (category, name, start) = open
                    .get_mut(&thread)
                    .and_then(Vec::pop)
                    .ok_or_else(|| format!("event {index}: an end event with no begin on its thread"))?;
                spans.push((category, name, end - start));
            }
            _ => {}
        }
    }
    Ok(spans)
}

/// The spans of one name: how many, and their time in all (microseconds).
#[derive(Default)]
struct Row {
    count: usize,
    time: f64,
}

/// A category's rows, most time first, and its time in all.
struct Section<'a> {
    category: &'a str,
    time: f64,
    rows: Vec<(&'a str, Row)>,
}

/// The table: one section per category, most total time first.
fn table(spans: &[Span]) -> String {
    let mut by_category: HashMap<&str, HashMap<&str, Row>> = HashMap::new();
    for (category, name, duration) in spans {
        let row = by_category.entry(category).or_default().entry(name).or_default();
        row.count += 1;
        row.time += duration;
    }
    let mut sections: Vec<Section<'_>> = by_category
        .into_iter()
        .map(|(category, rows)| {
            let mut rows: Vec<(&str, Row)> = rows.into_iter().collect();
            rows.sort_by(|a, b| b.1.time.total_cmp(&a.1.time).then(a.0.cmp(b.0)));
            Section { category, time: rows.iter().map(|row| row.1.time).sum(), rows }
        })
        .collect();
    sections.sort_by(|a, b| b.time.total_cmp(&a.time).then(a.category.cmp(b.category)));
    let mut out = String::new();
    for Section { category, time: total, rows } in sections {
        let shown = rows.len().min(TOP);
        out.push_str(&format!(
            "{category}: {} spans of {} names, {:.3} ms in all{}\n",
            rows.iter().map(|row| row.1.count).sum::<usize>(),
            rows.len(),
            total / 1000.0,
            if shown < rows.len() { format!(" (the top {shown} shown)") } else { String::new() }
        ));
        out.push_str(&format!("  {:>8} {:>12} {:>12} {:>7}  name\n", "count", "total ms", "mean us", "share"));
        for (name, Row { count, time }) in rows.into_iter().take(TOP) {
            let share = if total > 0.0 { 100.0 * time / total } else { 0.0 };
            out.push_str(&format!(
                "  {count:>8} {:>12.3} {:>12.3} {share:>6.1}%  {name}\n",
                time / 1000.0,
                time / count as f64
            ));
        }
        out.push('\n');
    }
    if out.is_empty() {
        out.push_str("no spans in the trace\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_and_paired_events_add_up_per_name() {
        let trace = r#"{"traceEvents":[
            {"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"main"}},
            {"ph":"X","cat":"kernel","name":"nn.conv2d","pid":1,"tid":1,"ts":0,"dur":300},
            {"ph":"X","cat":"kernel","name":"nn.relu","pid":1,"tid":1,"ts":300,"dur":100},
            {"ph":"X","cat":"kernel","name":"nn.conv2d","pid":1,"tid":2,"ts":0,"dur":500},
            {"ph":"B","cat":"vm","name":"m.f","pid":1,"tid":1,"ts":1000},
            {"ph":"E","pid":1,"tid":1,"ts":1250}
        ]}"#;
        let spans = spans(trace).unwrap();
        assert_eq!(spans.len(), 4);
        let table = table(&spans);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[0], "kernel: 3 spans of 2 names, 0.900 ms in all");
        assert_eq!(lines[2], "         2        0.800      400.000   88.9%  nn.conv2d");
        assert_eq!(lines[3], "         1        0.100      100.000   11.1%  nn.relu");
        assert_eq!(lines[5], "vm: 1 spans of 1 names, 0.250 ms in all");
        assert_eq!(lines[7], "         1        0.250      250.000  100.0%  m.f");
    }

    #[test]
    fn what_is_not_a_trace_is_an_error_that_says_so() {
        assert!(spans("{").unwrap_err().starts_with("not JSON"));
        assert!(spans("{}").unwrap_err().contains("no `traceEvents`"));
        assert!(spans(r#"[{"ph":"E","pid":1,"tid":1,"ts":3}]"#).unwrap_err().contains("no begin"));
        assert!(spans(r#"[{"ph":"X","name":"a","ts":3}]"#).unwrap_err().contains("without `dur`"));
    }
}
