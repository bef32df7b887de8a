use super::*;
use crate::format::{AttributeType, DType, SectionId};
use crate::test_file::{assemble, function, kernel, TestAttribute};
use rtx_kernel::attribute::{Attribute, AttributeError};
use rtx_kernel::record::KernelRecord;

/// The file of `func @main() -> i32 { %x = tfrt.constant.i32 42; tfrt.return %x }`, written out
/// byte by byte from the format's rules (strings sorted, one attribute, a pseudo kernel and one
/// kernel, file and kernel locations t.mlir:1:1 and t.mlir:2:8, and the three optional sections).
fn constant_file() -> Vec<u8> {
    let mut file = vec![0x0B, 0xEF, 0x00];
    file.extend([0x00, 0x42]);
    file.extend(b"i32\0main\0tfrt.constant.i32\0value\0");
    file.extend([0x01, 0x08, 0x2A, 0, 0, 0]);
    file.extend([0x02, 0x04, 0x01, 0x09]);
    file.extend([0x03, 0x04, 0x01, 0x00]);
    file.extend([0x04, 0x0E, 0x01, 0x00, 0x00, 0x04, 0x00, 0x01, 0x00]);
    file.extend([0x05, 0x81, 0x28]);
    file.extend([0x00, 0x01, 0x01, 0x02, 0x00, 0x00, 0x00, 0x24, 0x00, 0x00, 0x00, 0xCC]);
    for word in [0xABAB_ABABu32, 0xCDCD_CDCD, 0, 0, 0, 1, 1, 1, 1, 0, 4, 0, 1, 0, 1, 0, 0, 0] {
        file.extend(word.to_le_bytes());
    }
    file.extend([0x06, 0x0E]);
    file.extend(b"t.mlir\0");
    file.extend([0x07, 0x10, 0x01, 0x00, 0x01, 0x01, 0x01, 0x00, 0x02, 0x08]);
    file.extend([0x08, 0x06, 0x01, 0x00, 0x08, 0x09, 0x06, 0x01, 0x02, 0x1B, 0x0A, 0x06, 0x01, 0x01, 0x00]);
    file
}

fn registry_with(names: &[&str]) -> KernelRegistry {
    let mut registry = KernelRegistry::new();
    for name in names {
        registry.add_kernel(name, |_| Ok(()));
    }
    registry
}

#[test]
fn a_hand_written_file_opens_with_its_tables_and_locations() {
    let file = BefFile::from_bytes(&constant_file(), &registry_with(&["tfrt.constant.i32"])).unwrap();
    assert_eq!(file.num_functions(), 1);
    let main = file.function_info(file.function_index("main").unwrap()).unwrap();
    assert_eq!((main.kind, main.arguments.len(), main.results.len()), (FunctionKind::Async, 0, 1));
    assert_eq!(file.type_name(main.results[0]), "i32");
    assert_eq!(file.kernel_name(0), "tfrt.constant.i32");
    let body = main.body.as_ref().unwrap();
    let record = body.record(file.kernel_list(body), 1);
    assert_eq!((record.num_attributes(), record.attributes().get(0)), (1, 0));
    let value = Attribute::new(file.attributes_section(), 0).scalar::<i32>();
    assert_eq!(value, Ok(42));
    assert_eq!(file.location(record.location()).to_location().to_string(), "t.mlir:2:8");
}

#[test]
fn an_unknown_kernel_is_named_with_the_location_of_its_first_use() {
    let error = BefFile::from_bytes(&constant_file(), &KernelRegistry::new()).unwrap_err();
    assert_eq!(error.to_string(), "t.mlir:2:8: error: unknown kernel name 'tfrt.constant.i32'");
}

#[test]
fn every_truncation_is_an_error_and_never_a_panic() {
    let bytes = constant_file();
    let registry = registry_with(&["tfrt.constant.i32"]);
    // The functions section ends at byte 148; the location and optional sections after it
    // may be cut off whole (a program without them still runs), but not in the middle.
    let section_ends = [148, 157, 167, 172, 177];
    assert_eq!(bytes.len(), 182);
    for len in 0..bytes.len() {
        let result = BefFile::from_bytes(&bytes[..len], &registry);
        assert_eq!(result.is_ok(), section_ends.contains(&len), "a file cut to {len} bytes");
    }
}

#[test]
fn corrupting_any_byte_never_panics() {
    let bytes = assemble(&[function("f", &["i32"], &["i32", "i32"])
        .kernel(kernel("k.add", &[0, 0], &[1]).attribute(TestAttribute::i64(7)))
        .kernel(kernel("k.use", &[1], &[2]))
        .returns(&[2, 1])]);
    let registry = registry_with(&["k.add", "k.use"]);
    BefFile::from_bytes(&bytes, &registry).unwrap();
    for i in 0..bytes.len() {
        for flip in [0x01, 0x80, 0xFF] {
            let mut corrupt = bytes.clone();
            corrupt[i] ^= flip;
            let _ = BefFile::from_bytes(&corrupt, &registry);
        }
    }
}

#[test]
fn header_errors_say_what_is_wrong() {
    let registry = KernelRegistry::new();
    assert_eq!(BefFile::from_bytes(b"PK\x03\x04", &registry).unwrap_err(), BefError::NotBef);
    assert_eq!(BefFile::from_bytes(&[0x0B, 0xEF, 0x01], &registry).unwrap_err(), BefError::UnknownVersion(1));
    let missing = BefFile::from_bytes(&[0x0B, 0xEF, 0x00], &registry).unwrap_err();
    assert!(missing.to_string().contains("no Strings section"), "{missing}");
    let mut overlong = vec![0x0B, 0xEF, 0x00, 0x00, 0x10, b'a'];
    let error = BefFile::from_bytes(&overlong, &registry).unwrap_err();
    assert_eq!(error, BefError::malformed(5, "section 0 (header at byte 3): 8 bytes run past the end (1 left)"));
    overlong[4] = 0x03; // length 1 with the alignment flag: alignment byte 'a' (97) is not a power of two
    assert!(BefFile::from_bytes(&overlong, &registry).unwrap_err().to_string().contains("not a power of two"));
}

#[test]
fn unknown_sections_are_skipped() {
    let mut bytes = constant_file();
    bytes.extend([0x2A, 0x06, 1, 2, 3]);
    let file = BefFile::from_bytes(&bytes, &registry_with(&["tfrt.constant.i32"])).unwrap();
    assert_eq!(file.num_functions(), 1);
}

#[test]
fn unaligned_input_is_copied_to_aligned_memory() {
    let mut shifted = vec![0u8];
    shifted.extend(constant_file());
    let file = BefFile::from_bytes(&shifted[1..], &registry_with(&["tfrt.constant.i32"])).unwrap();
    assert_eq!(file.bytes().as_ptr() as usize % 8, 0);
}

#[test]
fn inconsistent_dataflow_graphs_are_refused() {
    let registry = registry_with(&["k"]);
    let good = assemble(&[function("f", &[], &["i32"]).kernel(kernel("k", &[], &[0])).returns(&[0])]);
    BefFile::from_bytes(&good, &registry).unwrap();
    // The register's use count (first byte after #registers) claims two uses instead of one.
    let functions = good.iter().rposition(|&b| b == SectionId::Functions as u8).unwrap();
    let mut wrong_count = good.clone();
    let uses_at = (functions..good.len()).find(|&i| good[i..].starts_with(&[0, 1, 1, 2])).unwrap() + 2;
    wrong_count[uses_at] = 2;
    let error = BefFile::from_bytes(&wrong_count, &registry).unwrap_err();
    assert!(error.to_string().contains("register 0 declares 2 uses"), "{error}");
}

#[test]
fn a_cycle_is_refused() {
    // k1 uses k2's result and k2 uses k1's: neither could ever run.
    let bytes = assemble(&[function("f", &[], &[]).kernel(kernel("k", &[1], &[0])).kernel(kernel("k", &[0], &[1]))]);
    let error = BefFile::from_bytes(&bytes, &registry_with(&["k"])).unwrap_err();
    assert!(error.to_string().contains("wait on a cycle"), "{error}");
}

#[test]
fn native_functions_resolve_by_name() {
    let bytes = assemble(&[function("native_add", &["i32"], &["i32"]).kind(FunctionKind::Native)]);
    let error = BefFile::from_bytes(&bytes, &KernelRegistry::new()).unwrap_err();
    assert_eq!(error, BefError::UnknownNativeFunction("native_add".into()));
    let mut registry = KernelRegistry::new();
    registry.add_native_function("native_add", |_, _, _| {});
    let file = BefFile::from_bytes(&bytes, &registry).unwrap();
    assert!(file.native_function(0).is_some());
}

/// Kernel 1 (`tfrt.constant.i32`) of `main` in `image`.
fn constant_record(image: &BefImage) -> KernelRecord<'_> {
    let body = image.function_info(0).unwrap().body.as_ref().unwrap();
    body.record(image.kernel_list(body), 1)
}

#[test]
fn attributes_are_found_by_the_names_of_the_attribute_names_section() {
    let image = BefImage::from_bytes(&constant_file()).unwrap();
    let record = constant_record(&image);
    assert_eq!(image.attribute_position(record, "value"), Ok(Some(0)));
    assert_eq!(image.attribute_position(record, "other"), Ok(None));
}

#[test]
fn without_optional_sections_attributes_have_no_names() {
    let mut bytes = constant_file();
    // The three optional sections are the last 15 bytes.
    bytes.truncate(bytes.len() - 15);
    let image = BefImage::from_bytes(&bytes).unwrap();
    assert_eq!(image.attribute_position(constant_record(&image), "value"), Err(AttributeError::NoAttributeNames));
}

/// The executor never reads the optional sections, so a bad one does not stop a file from
/// opening; a kernel asking for an attribute by name gets the error.
#[test]
fn attribute_names_that_disagree_with_the_bodies_are_an_error_when_asked_for() {
    let mut bytes = constant_file();
    let section = bytes.len() - 10;
    assert_eq!(&bytes[section..section + 5], [0x09, 0x06, 0x01, 0x02, 0x1B], "the attribute-names section");
    bytes[section + 3] = 0x03;
    let image = BefImage::from_bytes(&bytes).unwrap();
    let error = image.attribute_position(constant_record(&image), "value").unwrap_err();
    assert!(matches!(&error, AttributeError::Malformed { what, .. } if what.contains("kernel")), "{error}");
}

#[test]
fn one_image_binds_to_each_registry_on_its_own() {
    let image = Arc::new(BefImage::from_bytes(&constant_file()).unwrap());
    let error = BefFile::bind(&image, &registry_with(&[])).unwrap_err();
    assert!(
        matches!(&error, BefError::UnknownKernel { name, location } if name == "tfrt.constant.i32"
        && location.to_string() == "t.mlir:2:8"),
        "{error}"
    );
    let file = BefFile::bind(&image, &registry_with(&["tfrt.constant.i32"])).unwrap();
    assert!(Arc::ptr_eq(file.image(), &image), "binding shares the verified image");
}

#[test]
fn the_optional_sections_name_attribute_kinds_attribute_names_and_register_types() {
    let image = BefImage::from_bytes(&constant_file()).unwrap();
    let optional = image.optional_sections().unwrap();
    assert_eq!(optional.attribute_types, Some(vec![(0, AttributeType::Scalar(DType::I32))]));
    let no_names: Vec<String> = Vec::new();
    assert_eq!(optional.attribute_names, Some(vec![vec![no_names, vec!["value".to_owned()]]]));
    assert_eq!(optional.register_types, Some(vec![vec![0u32].into_boxed_slice()]));
    // Without them (the file cut after the locations), each is absent.
    let optional = BefImage::from_bytes(&constant_file()[..167]).unwrap().optional_sections().unwrap();
    assert!(optional.attribute_types.is_none() && optional.attribute_names.is_none());
    assert!(optional.register_types.is_none());
}

#[test]
fn optional_sections_that_disagree_with_the_functions_are_errors() {
    let mut bytes = constant_file();
    let registers = bytes.len() - 2; // the register-types section's register count
    assert_eq!(bytes[registers], 1);
    bytes[registers] = 0;
    let error = BefImage::from_bytes(&bytes).unwrap().optional_sections().unwrap_err();
    assert!(error.to_string().contains("0 register types, but the function has 1 registers"), "{error}");
    let mut bytes = constant_file();
    let name = bytes.len() - 6; // the attribute-names section's name offset
    assert_eq!(bytes[name], 0x1B);
    bytes[name] = 0x1C; // one byte into "value"
    let optional = BefImage::from_bytes(&bytes).unwrap().optional_sections().unwrap();
    assert_eq!(optional.attribute_names.unwrap()[0][1], ["alue"]);
    let mut bytes = constant_file();
    let code = bytes.len() - 11; // the attribute-types section's type code
    assert_eq!(bytes[code], DType::I32 as u8);
    bytes[code] = 0x7F;
    let error = BefImage::from_bytes(&bytes).unwrap().optional_sections().unwrap_err();
    assert!(error.to_string().contains("unknown attribute type 127"), "{error}");
}
