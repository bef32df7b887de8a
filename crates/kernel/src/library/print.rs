//! `tfrt.print.*`: each prints one line to the request's output and returns a chain, in TFRT's
//! exact format (`int32 = 42`, `f32 = 1.000000`, `complex64 = 1.000000+2.000000i`).

use super::scalar::{Complex, F16};
use crate::{KernelError, KernelFrame, KernelRegistry};
use rtx_host::Chain;

/// A float as C's `%f` prints it: six decimals; `inf`, `-inf`, `nan`, `-nan`.
pub fn c_fixed(value: f64) -> String {
    if value.is_nan() {
        return if value.is_sign_negative() { "-nan" } else { "nan" }.to_owned();
    }
    if value.is_infinite() {
        return if value < 0.0 { "-inf" } else { "inf" }.to_owned();
    }
    format!("{value:.6}")
}

/// A float as C's `%e` prints it (`1.000000e+00`); TFRT's driver prints f32 and f64 results so.
pub fn c_exponent(value: f64) -> String {
    if !value.is_finite() {
        return c_fixed(value);
    }
    let text = format!("{value:.6e}");
    let (mantissa, exponent) = text.split_once('e').expect("`{:e}` always has an exponent");
    let exponent: i32 = exponent.parse().expect("`{:e}` exponents are integers");
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exponent.abs())
}

fn print_line(frame: &mut KernelFrame<'_>, line: String) -> Result<(), KernelError> {
    frame.context().print(&line);
    frame.emplace_result(0, Chain)
}

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("tfrt.print.i1", |f| {
        let value = *f.get::<bool>(0)?;
        print_line(f, format!("int1 = {}\n", i32::from(value)))
    });
    registry.add_kernel("tfrt.print.i32", |f| {
        let value = *f.get::<i32>(0)?;
        print_line(f, format!("int32 = {value}\n"))
    });
    registry.add_kernel("tfrt.print.i64", |f| {
        let value = *f.get::<i64>(0)?;
        print_line(f, format!("int64 = {value}\n"))
    });
    registry.add_kernel("tfrt.print.f16", |f| {
        let value = *f.get::<F16>(0)?;
        print_line(f, format!("f16 = {}\n", value.0))
    });
    registry.add_kernel("tfrt.print.f32", |f| {
        let value = *f.get::<f32>(0)?;
        print_line(f, format!("f32 = {}\n", c_fixed(f64::from(value))))
    });
    registry.add_kernel("tfrt.print.f64", |f| {
        let value = *f.get::<f64>(0)?;
        print_line(f, format!("f64 = {}\n", c_fixed(value)))
    });
    registry.add_kernel("tfrt.print.complex64", |f| {
        let value = *f.get::<Complex<f32>>(0)?;
        print_line(f, format!("complex64 = {}+{}i\n", c_fixed(value.re.into()), c_fixed(value.im.into())))
    });
    registry.add_kernel("tfrt.print.complex128", |f| {
        let value = *f.get::<Complex<f64>>(0)?;
        print_line(f, format!("complex128 = {}+{}i\n", c_fixed(value.re), c_fixed(value.im)))
    });
}

#[cfg(test)]
mod tests {
    use super::{c_exponent, c_fixed};

    #[test]
    fn floats_print_as_c_percent_f() {
        assert_eq!(c_fixed(1.0), "1.000000");
        assert_eq!(c_fixed(-0.5), "-0.500000");
        assert_eq!(c_fixed(1e20), "100000000000000000000.000000");
        assert_eq!(c_fixed(f64::INFINITY), "inf");
        assert_eq!(c_fixed(-f64::NAN), "-nan");
    }

    #[test]
    fn floats_print_as_c_percent_e() {
        assert_eq!(c_exponent(1.0), "1.000000e+00");
        assert_eq!(c_exponent(-0.00125), "-1.250000e-03");
        assert_eq!(c_exponent(6.02e123), "6.020000e+123");
        assert_eq!(c_exponent(0.0), "0.000000e+00");
    }
}
