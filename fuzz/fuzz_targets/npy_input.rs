//! Arbitrary bytes as a `.npy` or `.npz` input (`--input=@x.npy`, `rtx.Context.invoke` of a file):
//! the magic and version, the header dictionary (dtype, fortran order, shape), the element count
//! against the bytes that follow, string arrays, and the ZIP container of `.npz`. A tensor decoded
//! from `.npy` with an element width NumPy has must encode (as `--output=@x.npy` writes it) to a
//! file that decodes back to the same tensor. (Other widths are read as IREE reads them, their
//! bit count multiplied by 8 into the element type's code whatever it spills into: they do not
//! round-trip, in IREE either.) Each input must end in
//! arrays or an error, never a panic, hang or an allocation of what a header claims.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rtx::hal::{npy, npz};

fuzz_target!(|data: &[u8]| {
    if let Ok((tensor, _)) = npy::decode(data) {
        let numpy_width = matches!(tensor.element_type.0 & 0x00ff_ffff, 8 | 16 | 32 | 64 | 128);
        if let (true, Ok(encoded)) = (numpy_width, npy::encode(&tensor)) {
            let (again, _) = npy::decode(&encoded).expect("what was encoded decodes");
            assert_eq!(again, tensor);
        }
    }
    let _ = npy::decode_array(data);
    let _ = npz::decode(data);
});
