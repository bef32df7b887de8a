//! The Chrome trace-event JSON of a session: a metadata event naming each thread's track, then
//! each thread's spans as complete (`"ph":"X"`) events and counter samples as counter (`"C"`)
//! events, in start order, times in microseconds from the session's start.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

use super::buffer::ThreadBuffer;
use super::{Category, Event, Value};

/// What a written file holds.
pub(super) struct Counts {
    pub(super) spans: usize,
    pub(super) samples: usize,
    pub(super) dropped: u64,
}

/// Writes the file.
pub(super) fn write(path: &Path, start: u64, buffers: &[Arc<ThreadBuffer>]) -> std::io::Result<Counts> {
    let pid = std::process::id();
    let mut out = String::from("{\"traceEvents\":[\n");
    let _ =
        write!(out, "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"tid\":0,\"args\":{{\"name\":\"rtx\"}}}}");
    let mut counts = Counts { spans: 0, samples: 0, dropped: 0 };
    for buffer in buffers {
        let _ = write!(
            out,
            ",\n{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{},\"args\":{{\"name\":{}}}}}",
            buffer.tid,
            Quoted(&buffer.thread_name)
        );
        let mut spans: Vec<&Event> = buffer.events().collect();
        let samples = spans.iter().filter(|event| event.category == Category::Counter).count();
        counts.samples += samples;
        counts.spans += spans.len() - samples;
        // Parents before the spans they hold: by start, the longer first.
        spans.sort_by_key(|event| (event.start, std::cmp::Reverse(event.end)));
        // Where the session started, on the buffer's clock.
        let origin = start as i64 - buffer.offset();
        for event in spans {
            out.push_str(",\n");
            complete_event(&mut out, pid, buffer.tid, origin, event);
        }
        counts.dropped += buffer.dropped();
    }
    let _ = write!(
        out,
        "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{{\"producer\":\"rtx\",\"dropped_events\":{}}}}}\n",
        counts.dropped
    );
    std::fs::File::create(path)?.write_all(out.as_bytes())?;
    Ok(counts)
}

/// A span as a complete event, a counter sample as a counter event.
fn complete_event(out: &mut String, pid: u32, tid: u64, origin: i64, event: &Event) {
    let ts = (event.start as i64).saturating_sub(origin).max(0) as u64;
    let duration = event.end.saturating_sub(event.start);
    let _ = write!(
        out,
        "{{\"ph\":\"{}\",\"cat\":{},\"name\":{},\"pid\":{pid},\"tid\":{tid},\"ts\":{}.{:03}",
        if event.category == Category::Counter { "C" } else { "X" },
        Quoted(event.category.name()),
        Quoted(event.name.as_str()),
        ts / 1000,
        ts % 1000,
    );
    if event.category != Category::Counter {
        let _ = write!(out, ",\"dur\":{}.{:03}", duration / 1000, duration % 1000);
    }
    if !event.args.is_empty() {
        out.push_str(",\"args\":{");
        for (i, (key, value)) in event.args.iter().enumerate() {
            let _ = write!(out, "{}{}:", if i > 0 { "," } else { "" }, Quoted(key));
            let _ = match value {
                Value::Text(text) => write!(out, "{}", Quoted(text.as_str())),
                Value::Count(count) => write!(out, "{count}"),
                Value::Grid([x, y, z]) => write!(out, "\"{x}x{y}x{z}\""),
            };
        }
        out.push('}');
    }
    out.push('}');
}

/// A JSON string literal of the text.
struct Quoted<'a>(&'a str);

impl std::fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_char('"')?;
        for c in self.0.chars() {
            match c {
                '"' => f.write_str("\\\"")?,
                '\\' => f.write_str("\\\\")?,
                '\n' => f.write_str("\\n")?,
                '\r' => f.write_str("\\r")?,
                '\t' => f.write_str("\\t")?,
                c if (c as u32) < 0x20 => write!(f, "\\u{:04x}", c as u32)?,
                c => f.write_char(c)?,
            }
        }
        f.write_char('"')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped_as_json_wants() {
        assert_eq!(Quoted("a\"b\\c\nd\u{1}é").to_string(), "\"a\\\"b\\\\c\\nd\\u0001é\"");
    }
}
