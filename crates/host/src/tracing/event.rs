//! What a span records: its name and arguments kept as they were given (a shared or static name
//! costs no copy, a number no formatting) and turned into text only when the trace is written.

use std::sync::Arc;

use super::Category;

/// One finished span.
pub(crate) struct Event {
    pub(crate) name: Text,
    pub(crate) category: Category,
    /// Nanoseconds since the process's tracing epoch.
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) args: Args,
}

/// A span's name or a text argument: borrowed for the program's life, shared with what names it
/// (a kernel, a dispatch's export), or made for the span.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Text {
    Static(&'static str),
    Shared(Arc<str>),
    Owned(String),
}

impl Text {
    pub fn as_str(&self) -> &str {
        match self {
            Text::Static(text) => text,
            Text::Shared(text) => text,
            Text::Owned(text) => text,
        }
    }
}

impl From<&'static str> for Text {
    fn from(text: &'static str) -> Text {
        Text::Static(text)
    }
}

impl From<String> for Text {
    fn from(text: String) -> Text {
        Text::Owned(text)
    }
}

impl From<Arc<str>> for Text {
    fn from(text: Arc<str>) -> Text {
        Text::Shared(text)
    }
}

impl From<&Arc<str>> for Text {
    fn from(text: &Arc<str>) -> Text {
        Text::Shared(Arc::clone(text))
    }
}

/// An argument shown beside a span.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Text(Text),
    /// Written as a JSON number.
    Count(u64),
    /// A dispatch's workgroup count, written `XxYxZ`.
    Grid([u32; 3]),
}

impl From<Text> for Value {
    fn from(text: Text) -> Value {
        Value::Text(text)
    }
}

impl From<&'static str> for Value {
    fn from(text: &'static str) -> Value {
        Value::Text(text.into())
    }
}

impl From<String> for Value {
    fn from(text: String) -> Value {
        Value::Text(text.into())
    }
}

impl From<u64> for Value {
    fn from(count: u64) -> Value {
        Value::Count(count)
    }
}

/// A span's arguments: none costs nothing, and a span with some allocates once for them (kept
/// out of the span itself, which is moved from where it opens to its thread's buffer).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Args(Vec<(&'static str, Value)>);

impl Args {
    pub fn none() -> Args {
        Args::default()
    }

    /// These arguments and `key`: `value`.
    pub fn with(mut self, key: &'static str, value: impl Into<Value>) -> Args {
        self.0.push((key, value.into()));
        self
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &(&'static str, Value)> {
        self.0.iter()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
