//! Resources: named blobs, bools and strings attached to a module (`{-# ... #-}` in text), grouped
//! by the dialect that owns them or by an external key.

use super::attribute::Blob;
use super::context::{DialectId, Sym};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResourceValue {
    /// Data with the alignment it requires.
    Blob {
        alignment: u64,
        data: Blob,
    },
    Bool(bool),
    String(Sym),
    /// Declared without data (`--elide-resource-data-from-bytecode`).
    Elided,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceEntry {
    pub key: Sym,
    pub value: ResourceValue,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceGroup<Owner> {
    pub owner: Owner,
    pub entries: Vec<ResourceEntry>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resources {
    /// `dialect_resources`, in file order.
    pub dialect: Vec<ResourceGroup<DialectId>>,
    /// `external_resources`, keyed by the external provider's name.
    pub external: Vec<ResourceGroup<Sym>>,
}
