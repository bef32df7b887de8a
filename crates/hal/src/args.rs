//! Reading a native function's arguments in calling-convention order: the one reader of the `hal`
//! and `vmvx` modules. The VM checked the values' kinds against the calling convention before the
//! call, so a mismatch here is a bug in a function's reading order; its error still names the
//! function and the argument.

use std::fmt;
use std::sync::Arc;

use smallvec::SmallVec;

use rtx_host::{Diagnostic, StatusCode};
use rtx_vm::buffer::ByteBuffer;
use rtx_vm::native::{Arg, Arguments};
use rtx_vm::refs::Ref;

/// The arguments of one call, and the function's full name (`hal.buffer.load`) for messages. A
/// copy reads the same arguments again from where the original stood.
#[derive(Clone)]
pub struct Args<'a> {
    module: &'static str,
    function: &'static str,
    values: Arguments<'a>,
    next: usize,
}

// The readers are inlined: they run for every argument of every call, and called out of line
// from the modules' functions they cost an 8x8 matmul call 4% (the scalar ones, returned through
// memory as a `Result`, are always inlined: left to the compiler, the digits MLP called them
// out of line at about 45 instructions a read).
impl<'a> Args<'a> {
    #[inline]
    pub fn new(module: &'static str, function: &'static str, values: Arguments<'a>) -> Args<'a> {
        Args { module, function, values, next: 0 }
    }

    /// An error that names the function: `<module>.<function>: <message>`.
    pub fn error(&self, code: StatusCode, message: impl fmt::Display) -> Diagnostic {
        Diagnostic::new(code, format!("{}.{}: {message}", self.module, self.function))
    }

    #[inline(always)]
    fn take(&mut self) -> Result<Arg<'a>, Diagnostic> {
        let value = self.values.get(self.next);
        self.next += 1;
        match value {
            Some(value) => Ok(value),
            None => Err(self.missing()),
        }
    }

    #[cold]
    fn missing(&self) -> Diagnostic {
        self.error(StatusCode::InvalidArgument, format!("missing argument {}", self.next - 1))
    }

    #[cold]
    fn mismatch(&self, expected: &str, found: Arg<'_>) -> Diagnostic {
        self.error(
            StatusCode::InvalidArgument,
            format!("argument {} is {} where {expected} was expected", self.next - 1, found.type_name()),
        )
    }

    #[inline(always)]
    pub fn i32(&mut self) -> Result<i32, Diagnostic> {
        match self.take()? {
            Arg::I32(v) => Ok(v),
            other => Err(self.mismatch("i32", other)),
        }
    }

    #[inline(always)]
    pub fn i64(&mut self) -> Result<i64, Diagnostic> {
        match self.take()? {
            Arg::I64(v) => Ok(v),
            other => Err(self.mismatch("i64", other)),
        }
    }

    /// A ref that may be null.
    #[inline(always)]
    pub fn opt_ref(&mut self) -> Result<Option<&'a Ref>, Diagnostic> {
        match self.take()? {
            Arg::Ref(r) => Ok(r),
            other => Err(self.mismatch("a ref", other)),
        }
    }

    /// A ref that must not be null.
    #[inline(always)]
    pub fn r(&mut self) -> Result<&'a Ref, Diagnostic> {
        match self.opt_ref()? {
            Some(value) => Ok(value),
            None => Err(self.null()),
        }
    }

    #[cold]
    fn null(&self) -> Diagnostic {
        self.error(StatusCode::InvalidArgument, format!("argument {} is a null ref", self.next - 1))
    }

    /// A `!vm.buffer` argument.
    #[inline]
    pub fn bytes(&mut self) -> Result<&'a Arc<ByteBuffer>, Diagnostic> {
        let index = self.next;
        self.vm_buffer(Operand::Index(index))
    }

    /// The `!vm.buffer` of the operand named `operand` (a kernel's `in`, `out`); null and other
    /// ref types are errors, as IREE's `iree_vm_buffer_check_deref` makes them.
    #[inline]
    pub fn buffer(&mut self, operand: &str) -> Result<&'a Arc<ByteBuffer>, Diagnostic> {
        self.vm_buffer(Operand::Named(operand))
    }

    #[inline]
    fn vm_buffer(&mut self, operand: Operand<'_>) -> Result<&'a Arc<ByteBuffer>, Diagnostic> {
        match self.take()? {
            Arg::Ref(Some(r)) => r.as_buffer().ok_or_else(|| {
                self.error(StatusCode::InvalidArgument, format!("{operand} is a {}, not a vm.buffer", r.type_name()))
            }),
            Arg::Ref(None) => Err(self.error(StatusCode::InvalidArgument, format!("{operand} is a null vm.buffer"))),
            other => {
                Err(self.error(StatusCode::InvalidArgument, format!("{operand} is {}, not a ref", other.type_name())))
            }
        }
    }

    /// A `!vm.buffer` holding text (names, messages, query keys).
    pub fn string(&mut self) -> Result<String, Diagnostic> {
        Ok(text(self.bytes()?))
    }

    /// The tuple count of a variadic span.
    #[inline(always)]
    pub fn span(&mut self) -> Result<usize, Diagnostic> {
        let count = self.i32()?;
        usize::try_from(count)
            .map_err(|_| self.error(StatusCode::InvalidArgument, format!("negative span count {count}")))
    }

    /// A span of i64s, inline up to the length of `A` (a [`Shape`](super::buffer_view::Shape)
    /// keeps a short one inline). Pushed one by one: collecting through `Result` into a
    /// `SmallVec` took several times the instructions, on every call of a program.
    pub fn i64_span<A: smallvec::Array<Item = i64>>(&mut self) -> Result<SmallVec<A>, Diagnostic> {
        let count = self.span()?;
        let mut values = SmallVec::new();
        for _ in 0..count {
            values.push(self.i64()?);
        }
        Ok(values)
    }

    /// A span of i64s (a shape) given to `read` where only reading it is needed: on the stack
    /// when short, as shapes are, so a check run on every call allocates nothing.
    pub fn with_i64_span<R>(&mut self, read: impl FnOnce(&[i64]) -> R) -> Result<R, Diagnostic> {
        let values = self.i64_span::<[i64; 8]>()?;
        Ok(read(&values))
    }
}

/// How an error names an argument: by position, or by the operand name a kernel gives it.
enum Operand<'s> {
    Index(usize),
    Named(&'s str),
}

impl fmt::Display for Operand<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operand::Index(index) => write!(f, "argument {index}"),
            Operand::Named(name) => f.write_str(name),
        }
    }
}

/// The text a `!vm.buffer` holds, invalid UTF-8 replaced. Valid text (the usual case: names and
/// query keys, read on every call of some programs) keeps the copy of the bytes as its storage.
pub fn text(bytes: &ByteBuffer) -> String {
    String::from_utf8(bytes.to_vec()).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtx_vm::value::Value;

    #[test]
    fn errors_name_the_function_and_the_argument() {
        let buffer = ByteBuffer::from_bytes(b"key").unwrap();
        let values = [Value::I32(3), Value::Ref(Some(Ref::Buffer(buffer))), Value::Ref(None), Value::I64(-1)];
        let mut args = Args::new("hal", "device.query.i64", Arguments::values(&values));
        assert_eq!(args.i64().unwrap_err().message, "hal.device.query.i64: argument 0 is i32 where i64 was expected");
        assert_eq!(args.string().unwrap(), "key");
        assert_eq!(args.r().unwrap_err().message, "hal.device.query.i64: argument 2 is a null ref");
        assert_eq!(args.bytes().unwrap_err().message, "hal.device.query.i64: argument 3 is i64, not a ref");
        assert_eq!(args.i32().unwrap_err().message, "hal.device.query.i64: missing argument 4");
        let invalid = ByteBuffer::from_bytes(b"a\xffb").unwrap();
        assert_eq!(text(&invalid), "a\u{fffd}b");
        let mut args = Args::new("vmvx", "abs.2d.f32", Arguments::values(&values[2..]));
        assert_eq!(args.buffer("in").unwrap_err().message, "vmvx.abs.2d.f32: in is a null vm.buffer");
        let negative = [Value::I32(-2)];
        let mut args = Args::new("hal", "fence.join", Arguments::values(&negative));
        assert_eq!(args.span().unwrap_err().message, "hal.fence.join: negative span count -2");
    }

    /// A span read in place gives what `i64_span` collects, short (on the stack) or long, and
    /// leaves the reader after it; a value of the wrong kind is the same error either way.
    #[test]
    fn spans_read_in_place_match_collected_ones() {
        for count in [0, 3, 8, 9, 20] {
            let mut values = vec![Value::I32(count)];
            values.extend((0..count).map(|i| Value::I64(i as i64 * 7 - 5)));
            values.push(Value::I32(42));
            let collected =
                Args::new("hal", "buffer_view.assert", Arguments::values(&values)).i64_span::<[i64; 4]>().unwrap();
            assert_eq!(collected.len(), count as usize);
            let mut args = Args::new("hal", "buffer_view.assert", Arguments::values(&values));
            assert_eq!(args.with_i64_span(<[i64]>::to_vec).unwrap(), collected.as_slice(), "{count} values");
            assert_eq!(args.i32().unwrap(), 42, "the reader continues after the span");
        }
        for count in [2, 10] {
            let mut values = vec![Value::I32(count)];
            values.extend((0..count).map(|_| Value::I32(1)));
            let mut args = Args::new("hal", "buffer_view.assert", Arguments::values(&values));
            assert_eq!(
                args.with_i64_span(|_| ()).unwrap_err().message,
                "hal.buffer_view.assert: argument 1 is i32 where i64 was expected"
            );
        }
    }
}
