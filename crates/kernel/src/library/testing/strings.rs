//! String kernels: `tfrt_test.get_string` (the `value` attribute), `print_string`
//! (`string = TEXT`), `append_string`, `string_equal`, `format_string` (a printf format with
//! one integer) and `read_string_from_file`.

use crate::{KernelError, KernelRegistry};
use rtx_host::{Chain, Diagnostic, StatusCode};

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("tfrt_test.get_string", |f| {
        let value = f.string_attribute(0)?.to_owned();
        f.emplace_result(0, value)
    });
    registry.add_kernel("tfrt_test.print_string", |f| {
        let line = format!("string = {}\n", f.get::<String>(0)?);
        f.context().print(&line);
        f.emplace_result(0, Chain)
    });
    registry.add_kernel("tfrt_test.append_string", |f| {
        let joined = format!("{}{}", f.get::<String>(0)?, f.get::<String>(1)?);
        f.emplace_result(0, joined)
    });
    registry.add_kernel("tfrt_test.string_equal", |f| {
        let equal = f.get::<String>(0)? == f.get::<String>(1)?;
        f.emplace_result(0, equal)
    });
    registry.add_kernel("tfrt_test.format_string", |f| {
        let text = format_integer(f.get::<String>(0)?, *f.get::<i32>(1)?)?;
        f.emplace_result(0, text)
    });
    registry.add_kernel("tfrt_test.read_string_from_file", |f| {
        let path = f.get::<String>(0)?;
        let data = std::fs::read(path).map_err(|_| format!("failed to read from file {path}"))?;
        f.emplace_result(0, String::from_utf8_lossy(&data).into_owned())
    });
}

/// `format` with its one integer conversion (`%d`, `%i`, `%05d`, `%x`, ...) replaced by `value`,
/// as C's printf writes it; `%%` is a percent sign.
pub fn format_integer(format: &str, value: i32) -> Result<String, KernelError> {
    let bad =
        |why: &str| KernelError(Diagnostic::new(StatusCode::InvalidArgument, format!("format `{format}`: {why}")));
    let mut out = String::new();
    let mut used = false;
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        let mut spec = String::new();
        while let Some(&d) = chars.peek().filter(|d| matches!(d, '0'..='9' | '-' | '+' | ' ')) {
            spec.push(d);
            chars.next();
        }
        let conversion = chars.next().ok_or_else(|| bad("ends inside a conversion"))?;
        if used {
            return Err(bad("has more than one conversion"));
        }
        used = true;
        let digits = match conversion {
            'd' | 'i' => value.to_string(),
            'u' => (value as u32).to_string(),
            'x' => format!("{:x}", value as u32),
            'X' => format!("{:X}", value as u32),
            'o' => format!("{:o}", value as u32),
            other => return Err(bad(&format!("`%{other}` is not an integer conversion"))),
        };
        out.push_str(&pad(&spec, digits));
    }
    Ok(out)
}

/// Applies printf's flags and width (`-` left-aligns, `0` pads with zeros after the sign).
fn pad(spec: &str, digits: String) -> String {
    let flags: String = spec.chars().take_while(|c| matches!(c, '-' | '+' | ' ' | '0')).collect();
    let width: usize = spec[flags.len()..].parse().unwrap_or(0);
    let negative = digits.starts_with('-');
    let mut body = digits;
    if !negative && flags.contains('+') {
        body.insert(0, '+');
    } else if !negative && flags.contains(' ') {
        body.insert(0, ' ');
    }
    let fill = width.saturating_sub(body.len());
    if flags.contains('-') {
        body + &" ".repeat(fill)
    } else if flags.contains('0') {
        let sign = usize::from(body.starts_with(['-', '+', ' ']));
        format!("{}{}{}", &body[..sign], "0".repeat(fill), &body[sign..])
    } else {
        " ".repeat(fill) + &body
    }
}

#[cfg(test)]
mod tests {
    use super::format_integer;

    #[test]
    fn integers_format_as_printf_writes_them() {
        assert_eq!(format_integer("file_%d.txt", 7).unwrap(), "file_7.txt");
        assert_eq!(format_integer("%05d|%%", -42).unwrap(), "-0042|%");
        assert_eq!(
            format_integer("[%-4d][%x]", 3).unwrap_err().0.message,
            "format `[%-4d][%x]`: has more than one conversion"
        );
        assert_eq!(format_integer("[%-4d]", 3).unwrap(), "[3   ]");
        assert_eq!(format_integer("%+3i", 5).unwrap(), " +5");
        assert!(format_integer("%s", 1).is_err());
    }
}
