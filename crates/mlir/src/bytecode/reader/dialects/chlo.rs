//! CHLO's attribute encodings (`ChloBytecode.cpp` in openxla/stablehlo): its two comparison
//! enums, which print like StableHLO's. CHLO has no custom-encoded types.

use super::stablehlo::{enum_attr, COMPARISON_DIRECTIONS, COMPARISON_TYPES};
use super::{Decoded, Payload};

pub(super) fn attr(p: &mut Payload<'_, '_>) -> Decoded {
    let code_offset = p.offset();
    match p.varint("chlo attribute code")? {
        0 => enum_attr("chlo", p, "comparison_direction", COMPARISON_DIRECTIONS),
        1 => enum_attr("chlo", p, "comparison_type", COMPARISON_TYPES),
        code => Err(p.invalid(code_offset, format!("unknown chlo attribute code {code}"))),
    }
}
