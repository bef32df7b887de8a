//! The optional attribute-names section: for each kernel, the names of its attributes in the
//! order of its attribute operands, so that kernels can ask for an attribute by name.
//!
//! Layout: `vbr #functions` (the whole function index), then per function with a body
//! `vbr #kernels` (the pseudo kernel included) and, per kernel, one `vbr` string offset per
//! attribute the kernel record declares.

use std::collections::HashMap;
use std::ops::Range;

use super::cursor::Cursor;
use super::error::BefError;
use super::FunctionInfo;

/// Attribute names by kernel record, verified against the function bodies at open.
pub(super) struct AttributeNames {
    /// Keyed by the record's byte offset in the file; kernels without attributes are left out.
    by_record: HashMap<usize, Box<[Box<str>]>>,
}

impl AttributeNames {
    /// Reads `section` (at absolute offset `base`) against the verified `functions` of `file`.
    pub(super) fn read(
        section: &[u8],
        base: usize,
        functions: &[FunctionInfo],
        file: &[u8],
        functions_section: &Range<usize>,
        string: &dyn Fn(u32, usize, &str) -> Result<String, BefError>,
    ) -> Result<AttributeNames, BefError> {
        // Counts are checked against the verified bodies, not against the bytes left: kernels
        // without attributes and native functions take no bytes after their count.
        let mut cursor = Cursor::new(section, base);
        let at = cursor.offset();
        let count = cursor.vbr_u32("attribute-names function count")? as usize;
        if count != functions.len() {
            return Err(BefError::malformed(
                at,
                format!("the attribute-names section describes {count} functions, the index has {}", functions.len()),
            ));
        }
        let mut by_record = HashMap::new();
        for body in functions.iter().filter_map(|f| f.body.as_ref()) {
            let at = cursor.offset();
            let kernels = cursor.vbr_u32("attribute-names kernel count")? as usize;
            if kernels != body.kernels.len() {
                return Err(BefError::malformed(
                    at,
                    format!("the attribute names list {kernels} kernels, the function body has {}", body.kernels.len()),
                ));
            }
            let list = &file[body.list_start..functions_section.end];
            for k in 0..kernels {
                let record = body.record(list, k);
                let names = (0..record.num_attributes())
                    .map(|_| {
                        let at = cursor.offset();
                        let offset = cursor.vbr_u32("attribute name offset")?;
                        string(offset, at, "attribute name").map(String::into_boxed_str)
                    })
                    .collect::<Result<Box<[Box<str>]>, BefError>>()?;
                if !names.is_empty() {
                    by_record.insert(record.offset_in(file), names);
                }
            }
        }
        Ok(AttributeNames { by_record })
    }

    /// The position of attribute `name` among those of the record at byte `record`.
    pub(super) fn position(&self, record: usize, name: &str) -> Option<usize> {
        self.by_record.get(&record)?.iter().position(|n| &**n == name)
    }
}
