//! The optional sections, which only the disassembler reads (the executor never needs them):
//! attribute types (`vbr count`, then `vbr offset, vbr type code` per attribute), attribute names
//! (`vbr #functions`, then per function with a body `vbr #kernels` and per kernel after the
//! pseudo kernel one `vbr` string offset per attribute) and register types (`vbr #functions`,
//! then per function with a body `vbr #registers` and a `vbr` type index per register).

use std::ops::Range;

use super::cursor::Cursor;
use super::error::BefError;
use super::image::BefImage;
use crate::format::AttributeType;

/// What the optional sections say; each is `None` when the file leaves it out.
#[derive(Debug, Default)]
pub struct OptionalSections {
    /// Each attribute's offset in the attributes section and its kind, in the section's order.
    pub attribute_types: Option<Vec<(u32, AttributeType)>>,
    /// Per function of the index (empty for native functions), per kernel (the pseudo kernel
    /// first, with none), the names of its attributes.
    pub attribute_names: Option<Vec<Vec<Vec<String>>>>,
    /// Per function of the index (empty for native functions), each register's type index.
    pub register_types: Option<Vec<Box<[u32]>>>,
}

impl BefImage {
    /// Decodes the optional sections, checked against the functions they describe.
    pub fn optional_sections(&self) -> Result<OptionalSections, BefError> {
        let sections = self.sections();
        Ok(OptionalSections {
            attribute_types: self.present(&sections.attribute_types, |c| self.attribute_types(c))?,
            attribute_names: self.present(&sections.attribute_names, |c| self.attribute_names(c))?,
            register_types: self.present(&sections.register_types, |c| self.register_types(c))?,
        })
    }

    /// Runs `read` over the section at `range` unless it is absent (or empty, which no
    /// well-formed optional section is), and checks it reads the whole section.
    fn present<T>(
        &self,
        range: &Range<usize>,
        read: impl FnOnce(&mut Cursor<'_>) -> Result<T, BefError>,
    ) -> Result<Option<T>, BefError> {
        if range.is_empty() {
            return Ok(None);
        }
        let mut cursor = Cursor::new(self.section(range), range.start);
        let value = read(&mut cursor)?;
        if !cursor.is_empty() {
            return Err(cursor.error("bytes after the end of the section's entries"));
        }
        Ok(Some(value))
    }

    fn attribute_types(&self, cursor: &mut Cursor<'_>) -> Result<Vec<(u32, AttributeType)>, BefError> {
        let count = cursor.count("attribute count")?;
        let mut types = Vec::with_capacity(count);
        for _ in 0..count {
            let at = cursor.offset();
            let offset = cursor.vbr_u32("attribute offset")?;
            if offset as usize >= self.attributes_section().len() {
                return Err(BefError::malformed(
                    at,
                    format!("attribute offset {offset} is outside the attributes section"),
                ));
            }
            let at = cursor.offset();
            let code = cursor.vbr("attribute type")?;
            let kind = u8::try_from(code)
                .ok()
                .and_then(AttributeType::from_code)
                .ok_or_else(|| BefError::malformed(at, format!("unknown attribute type {code}")))?;
            types.push((offset, kind));
        }
        Ok(types)
    }

    /// Reads the function count, then `per_body` for each function with a body.
    fn per_function<T: Default>(
        &self,
        cursor: &mut Cursor<'_>,
        mut per_body: impl FnMut(&mut Cursor<'_>, &super::FunctionBody) -> Result<T, BefError>,
    ) -> Result<Vec<T>, BefError> {
        let at = cursor.offset();
        let count = cursor.vbr_u32("function count")? as usize;
        if count != self.num_functions() {
            return Err(BefError::malformed(
                at,
                format!("{count} functions, but the index has {}", self.num_functions()),
            ));
        }
        self.functions
            .iter()
            .map(|info| match &info.body {
                Some(body) => per_body(cursor, body),
                None => Ok(T::default()),
            })
            .collect()
    }

    fn attribute_names(&self, cursor: &mut Cursor<'_>) -> Result<Vec<Vec<Vec<String>>>, BefError> {
        self.per_function(cursor, |cursor, body| {
            let at = cursor.offset();
            let count = cursor.vbr_u32("kernel count")? as usize;
            if count != body.kernels.len() {
                return Err(BefError::malformed(
                    at,
                    format!("{count} kernels, but the function has {}", body.kernels.len()),
                ));
            }
            let mut kernels = vec![Vec::new()];
            for record in self.records(body).skip(1) {
                let names = (0..record.num_attributes())
                    .map(|_| {
                        let at = cursor.offset();
                        let offset = cursor.vbr_u32("attribute name")?;
                        self.string(offset, "attribute name").map(str::to_owned).map_err(|e| match e {
                            BefError::Malformed { what, .. } => BefError::malformed(at, what),
                            other => other,
                        })
                    })
                    .collect::<Result<_, _>>()?;
                kernels.push(names);
            }
            Ok(kernels)
        })
    }

    fn register_types(&self, cursor: &mut Cursor<'_>) -> Result<Vec<Box<[u32]>>, BefError> {
        self.per_function(cursor, |cursor, body| {
            let at = cursor.offset();
            let count = cursor.count("register count")?;
            if count != body.num_registers() {
                return Err(BefError::malformed(
                    at,
                    format!("{count} register types, but the function has {} registers", body.num_registers()),
                ));
            }
            (0..count)
                .map(|_| {
                    let at = cursor.offset();
                    let index = cursor.vbr_u32("register type")?;
                    if index as usize >= self.num_types() {
                        return Err(BefError::malformed(at, format!("register type {index} of {}", self.num_types())));
                    }
                    Ok(index)
                })
                .collect()
        })
    }
}
