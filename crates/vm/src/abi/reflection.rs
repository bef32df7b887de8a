//! Everything a function's reflection attributes (`FunctionSignatureDef.attrs`) say about its ABI,
//! parsed once: the declaration and invocation model IREE 3.x writes on every export, and the
//! older mangled signatures (`abi`/`abiv`, raw `f`/`fv`/`fbr`, structured `sip`/`sipv`) that other
//! producers may still attach.

use super::cconv::CallingConvention;
use super::declaration::{AbiModel, FunctionDeclaration, DECLARATION_ATTR, MODEL_ATTR};
use super::mangling::{RawSignature, SipSignature};
use super::AbiError;
use crate::module_def::FunctionSignature;

/// The only version of the raw and SIP signature formats there is.
const SIGNATURE_VERSION: &str = "1";

/// The `iree.abi.declaration` attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeclarationAttr {
    Parsed(FunctionDeclaration),
    /// Not the compiler's form: frontends may replace the declaration with text of their own
    /// (Python signatures, say), so this is kept rather than treated as a broken module.
    Unparsed {
        text: String,
        error: AbiError,
    },
}

/// The ABI reflection of one function.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionReflection {
    pub declaration: Option<DeclarationAttr>,
    pub model: AbiModel,
    /// `abi`: the name of the ABI the function follows (e.g. `sip`).
    pub abi: Option<String>,
    /// `abiv`: that ABI's version.
    pub abi_version: Option<u32>,
    /// `f`: the raw buffer signature.
    pub raw_signature: Option<RawSignature>,
    /// `fbr`: the function that allocates results whose shapes depend on the inputs.
    pub result_allocator: Option<String>,
    /// `sip`: the structured index path signature.
    pub sip_signature: Option<SipSignature>,
}

impl FunctionReflection {
    /// From `(key, value)` pairs; the first of duplicate keys wins, as in the runtime's lookup.
    pub fn from_attrs(attrs: &[(&str, &str)]) -> Result<FunctionReflection, AbiError> {
        FunctionReflection::from_lookup(|key| attrs.iter().find(|(k, _)| *k == key).map(|&(_, value)| value))
    }

    pub fn from_signature(signature: &FunctionSignature) -> Result<FunctionReflection, AbiError> {
        FunctionReflection::from_lookup(|key| signature.attr(key))
    }

    /// Fails on a malformed mangled signature, an unknown model or version; a declaration that
    /// does not parse is kept as [`DeclarationAttr::Unparsed`] instead.
    fn from_lookup<'a>(attr: impl Fn(&str) -> Option<&'a str>) -> Result<FunctionReflection, AbiError> {
        let declaration = attr(DECLARATION_ATTR).map(|text| match FunctionDeclaration::parse(text) {
            Ok(declaration) => DeclarationAttr::Parsed(declaration),
            Err(error) => DeclarationAttr::Unparsed { text: text.to_owned(), error },
        });
        for version_key in ["fv", "sipv"] {
            if let Some(version) = attr(version_key).filter(|&version| version != SIGNATURE_VERSION) {
                return Err(AbiError::attribute(version_key, version, "unsupported signature version, expected 1"));
            }
        }
        let abi_version = attr("abiv")
            .map(|version| {
                version.parse().map_err(|_| AbiError::attribute("abiv", version, "expected a version number"))
            })
            .transpose()?;
        Ok(FunctionReflection {
            declaration,
            model: AbiModel::from_attr(attr(MODEL_ATTR))?,
            abi: attr("abi").map(str::to_owned),
            abi_version,
            raw_signature: attr("f").map(RawSignature::parse).transpose()?,
            result_allocator: attr("fbr").map(str::to_owned),
            sip_signature: attr("sip").map(SipSignature::parse).transpose()?,
        })
    }

    /// The declaration, when it is the compiler's form.
    pub fn parsed_declaration(&self) -> Option<&FunctionDeclaration> {
        match &self.declaration {
            Some(DeclarationAttr::Parsed(declaration)) => Some(declaration),
            _ => None,
        }
    }

    /// Checks the parsed declaration (if any) against the model and the calling convention `cconv`.
    pub fn check_calling_convention(&self, cconv: &CallingConvention) -> Result<(), AbiError> {
        let Some(declaration) = self.parsed_declaration() else { return Ok(()) };
        if declaration.is_async != (self.model == AbiModel::CoarseFences) {
            return Err(AbiError::Mismatch {
                declaration: declaration.to_string(),
                cconv: cconv.to_string(),
                message: format!("the declaration is {} but the ABI model is {:?}", sync_word(declaration), self.model),
            });
        }
        declaration.check_calling_convention(cconv)
    }
}

fn sync_word(declaration: &FunctionDeclaration) -> &'static str {
    if declaration.is_async {
        "async"
    } else {
        "sync"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{AbiText, SipValue};
    use crate::module_def::Attr;

    #[test]
    fn compiler_attributes_give_declaration_and_model() {
        let reflection = FunctionReflection::from_attrs(&[
            ("iree.abi.declaration", "async func @f(%input0: tensor<4xf32>) -> (%output0: tensor<4xf32>)"),
            ("iree.abi.model", "coarse-fences"),
        ])
        .unwrap();
        assert_eq!(reflection.model, AbiModel::CoarseFences);
        assert_eq!(reflection.parsed_declaration().map(|d| d.name.as_str()), Some("f"));
        assert_eq!(reflection.raw_signature, None);
        let cconv = CallingConvention::parse("0rrr_r").unwrap();
        assert_eq!(reflection.check_calling_convention(&cconv), Ok(()));
        let cconv = CallingConvention::parse("0r_r").unwrap();
        assert!(matches!(reflection.check_calling_convention(&cconv), Err(AbiError::Mismatch { .. })));
    }

    #[test]
    fn model_and_declaration_must_agree() {
        let reflection = FunctionReflection::from_attrs(&[("iree.abi.declaration", "async func @f() -> ()")]).unwrap();
        let cconv = CallingConvention::parse("0rr_v").unwrap();
        let Err(AbiError::Mismatch { message, .. }) = reflection.check_calling_convention(&cconv) else {
            panic!("async declaration without a model was accepted")
        };
        assert_eq!(message, "the declaration is async but the ABI model is Sync");
    }

    #[test]
    fn free_text_declarations_are_kept() {
        let reflection =
            FunctionReflection::from_attrs(&[("iree.abi.declaration", "some.python.thing(types_are_overrated)")])
                .unwrap();
        let Some(DeclarationAttr::Unparsed { text, error }) = &reflection.declaration else { panic!() };
        assert_eq!(text, "some.python.thing(types_are_overrated)");
        assert!(matches!(error, AbiError::Syntax { what: AbiText::Declaration, offset: 0, .. }));
        assert_eq!(reflection.check_calling_convention(&CallingConvention::default()), Ok(()));
    }

    #[test]
    fn mangled_signatures_are_parsed() {
        let signature = FunctionSignature {
            calling_convention: Some("0r_r".to_owned()),
            attrs: [
                ("abi", "sip"),
                ("abiv", "1"),
                ("fv", "1"),
                ("f", "I6!S3!t6R6!S3!t2"),
                ("fbr", "__alloc"),
                ("sipv", "1"),
                ("sip", "I3!_0R3!_0"),
            ]
            .into_iter()
            .map(|(key, value)| Attr { key: key.to_owned(), value: value.to_owned() })
            .collect(),
        };
        let reflection = FunctionReflection::from_signature(&signature).unwrap();
        assert_eq!(reflection.abi.as_deref(), Some("sip"));
        assert_eq!(reflection.abi_version, Some(1));
        assert_eq!(reflection.raw_signature.map(|s| s.to_string()).as_deref(), Some("I6!S3!t6R6!S3!t2"));
        assert_eq!(reflection.result_allocator.as_deref(), Some("__alloc"));
        assert_eq!(reflection.sip_signature.and_then(|s| s.inputs), Some(SipValue::Raw(0)));
        assert_eq!(reflection.declaration, None);
        assert_eq!(reflection.model, AbiModel::Sync);
    }

    #[test]
    fn bad_attributes_are_errors() {
        let error = |attrs: &[(&str, &str)]| FunctionReflection::from_attrs(attrs).unwrap_err().to_string();
        assert_eq!(error(&[("fv", "2")]), "attribute `fv` = `2`: unsupported signature version, expected 1");
        assert_eq!(error(&[("sipv", "0")]), "attribute `sipv` = `0`: unsupported signature version, expected 1");
        assert_eq!(error(&[("abiv", "one")]), "attribute `abiv` = `one`: expected a version number");
        assert_eq!(
            error(&[("iree.abi.model", "sync")]),
            "attribute `iree.abi.model` = `sync`: unknown ABI model, expected `coarse-fences`"
        );
        assert_eq!(error(&[("f", "I1!")]), "raw signature `I1!`, byte 3: missing the results span `R`");
        assert_eq!(error(&[("sip", "R1!")]), "SIP signature `R1!`, byte 0: expected the inputs span `I`");
    }

    #[test]
    fn first_duplicate_key_wins() {
        let reflection =
            FunctionReflection::from_attrs(&[("iree.abi.model", "coarse-fences"), ("iree.abi.model", "x")]).unwrap();
        assert_eq!(reflection.model, AbiModel::CoarseFences);
    }
}
