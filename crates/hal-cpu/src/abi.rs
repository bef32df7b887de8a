//! The executable library ABI, version 6: the C structures through which the IREE 3.13 llvm-cpu
//! backend's executables describe themselves and receive their dispatches
//! (`runtime/src/iree/hal/local/executable_library.h` in IREE).
//!
//! Every layout here is fixed by compiled code we do not control, so each struct is `#[repr(C)]`
//! with its size and field offsets asserted at compile time: a wrong offset would not fail to
//! link, it would silently hand the executable garbage.

use std::ffi::{c_char, c_int, c_void};
use std::mem::{offset_of, size_of};

/// The one symbol an executable exports; resolving it is all a loader needs to do.
pub const LIBRARY_QUERY_SYMBOL: &str = "iree_hal_executable_library_query";

/// `IREE_HAL_EXECUTABLE_LIBRARY_VERSION_0_6`, the only version IREE 3.13 emits and we accept.
pub const LIBRARY_VERSION: u32 = 6;

/// Workgroup local memory is requested in pages of this many bytes.
pub const LOCAL_MEMORY_PAGE_SIZE: usize = 4096;

/// Limits the runtime enforces on every export (the compiler never exceeds them).
pub const MAX_CONSTANT_COUNT: usize = 64;
pub const MAX_BINDING_COUNT: usize = 64;

/// `iree_hal_executable_library_header_t`.
#[repr(C)]
pub struct LibraryHeader {
    pub version: u32,
    pub name: *const c_char,
    pub features: u32,
    pub sanitizer: i32,
}

/// An imported function: `params` points at a packed struct of its results then its arguments.
pub type ImportFn = unsafe extern "C" fn(params: *mut c_void, context: *mut c_void, reserved: *mut c_void) -> c_int;

/// Executables call imports only through this thunk, so a loader could bridge calling conventions.
pub type ImportThunk =
    unsafe extern "C" fn(function: ImportFn, params: *mut c_void, context: *mut c_void, reserved: *mut c_void) -> c_int;

/// `iree_hal_executable_import_table_v0_t`: names sorted by `strcmp`; a leading `?` marks an import
/// the executable can do without.
#[repr(C)]
pub struct ImportTable {
    pub count: u32,
    pub symbols: *const *const c_char,
}

/// `iree_hal_processor_v0_t`: architecture-specific feature words (IREE's `cpu_data.h` encoding).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Processor {
    pub data: [u64; 8],
}

/// `iree_hal_executable_environment_v0_t`, shared by every dispatch of one loaded executable.
#[repr(C)]
pub struct Environment {
    pub constants: *const u32,
    pub import_thunk: Option<ImportThunk>,
    pub import_funcs: *const Option<ImportFn>,
    pub import_contexts: *const *const c_void,
    pub processor: Processor,
}

/// `iree_hal_executable_dispatch_state_v0_t`, shared by every workgroup of one dispatch.
#[repr(C)]
pub struct DispatchState {
    pub workgroup_size_x: u32,
    pub workgroup_size_y: u32,
    pub workgroup_size_z: u16,
    pub constant_count: u16,
    pub workgroup_count_x: u32,
    pub workgroup_count_y: u32,
    pub workgroup_count_z: u16,
    pub max_concurrency: u8,
    pub binding_count: u8,
    pub constants: *const u32,
    pub binding_ptrs: *const *mut c_void,
    pub binding_lengths: *const usize,
}

/// `iree_hal_executable_workgroup_state_v0_t`, unique to each workgroup.
#[repr(C)]
pub struct WorkgroupState {
    pub workgroup_id_x: u32,
    pub workgroup_id_y: u32,
    pub workgroup_id_z: u16,
    pub reserved: u16,
    pub processor_id: u32,
    pub local_memory: *mut c_void,
    pub local_memory_size: u32,
}

/// An exported dispatch function; returns 0 on success.
pub type DispatchFn = unsafe extern "C" fn(
    environment: *const Environment,
    dispatch: *const DispatchState,
    workgroup: *const WorkgroupState,
) -> c_int;

/// `iree_hal_executable_library_query_fn_t`.
pub type QueryFn =
    unsafe extern "C" fn(max_version: u32, environment: *const Environment) -> *const *const LibraryHeader;

/// Bits of [`DispatchAttrs::flags`].
pub const DISPATCH_FLAG_SEQUENTIAL: u64 = 1 << 0;
pub const DISPATCH_FLAG_WORKGROUP_SIZE_DYNAMIC: u64 = 1 << 1;

/// `iree_hal_executable_dispatch_attrs_v0_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DispatchAttrs {
    pub flags: u64,
    pub local_memory_pages: u16,
    pub constant_count: u8,
    pub binding_count: u8,
    pub workgroup_size_x: u32,
    pub workgroup_size_y: u32,
    pub workgroup_size_z: u16,
    pub parameter_count: u16,
    pub reserved: [u64; 5],
}

/// `iree_hal_executable_export_table_v0_t`. The tables we do not read (parameter reflection,
/// occupancy, source locations) stay opaque pointers.
#[repr(C)]
pub struct ExportTable {
    pub count: u32,
    pub ptrs: *const Option<DispatchFn>,
    pub attrs: *const DispatchAttrs,
    pub params: *const c_void,
    pub occupancy: *const c_void,
    pub names: *const *const c_char,
    pub tags: *const *const c_char,
    pub parameter_names: *const *const c_char,
    pub source_locations: *const c_void,
    pub stage_locations: *const c_void,
}

/// `iree_hal_executable_constant_table_v0_t`: how many executable-level constants the library
/// expects in [`Environment::constants`].
#[repr(C)]
pub struct ConstantTable {
    pub count: u32,
}

/// `iree_hal_executable_source_file_table_v0_t` (embedded sources for profilers; unread).
#[repr(C)]
pub struct SourceFileTable {
    pub count: u32,
    pub files: *const c_void,
}

/// `iree_hal_executable_library_v0_t`, what the query's header pointer really points at.
#[repr(C)]
pub struct LibraryV0 {
    pub header: *const LibraryHeader,
    pub imports: ImportTable,
    pub exports: ExportTable,
    pub constants: ConstantTable,
    pub sources: SourceFileTable,
}

const _: () = {
    assert!(size_of::<LibraryHeader>() == 24);
    assert!(offset_of!(LibraryHeader, name) == 8);
    assert!(offset_of!(LibraryHeader, features) == 16);
    assert!(offset_of!(LibraryHeader, sanitizer) == 20);

    assert!(size_of::<ImportTable>() == 16);
    assert!(offset_of!(ImportTable, symbols) == 8);

    assert!(size_of::<Processor>() == 64);
    assert!(size_of::<Environment>() == 96);
    assert!(offset_of!(Environment, import_thunk) == 8);
    assert!(offset_of!(Environment, import_funcs) == 16);
    assert!(offset_of!(Environment, import_contexts) == 24);
    assert!(offset_of!(Environment, processor) == 32);

    assert!(size_of::<DispatchState>() == 48);
    assert!(offset_of!(DispatchState, workgroup_size_y) == 4);
    assert!(offset_of!(DispatchState, workgroup_size_z) == 8);
    assert!(offset_of!(DispatchState, constant_count) == 10);
    assert!(offset_of!(DispatchState, workgroup_count_x) == 12);
    assert!(offset_of!(DispatchState, workgroup_count_y) == 16);
    assert!(offset_of!(DispatchState, workgroup_count_z) == 20);
    assert!(offset_of!(DispatchState, max_concurrency) == 22);
    assert!(offset_of!(DispatchState, binding_count) == 23);
    assert!(offset_of!(DispatchState, constants) == 24);
    assert!(offset_of!(DispatchState, binding_ptrs) == 32);
    assert!(offset_of!(DispatchState, binding_lengths) == 40);

    assert!(size_of::<WorkgroupState>() == 32);
    assert!(offset_of!(WorkgroupState, workgroup_id_y) == 4);
    assert!(offset_of!(WorkgroupState, workgroup_id_z) == 8);
    assert!(offset_of!(WorkgroupState, reserved) == 10);
    assert!(offset_of!(WorkgroupState, processor_id) == 12);
    assert!(offset_of!(WorkgroupState, local_memory) == 16);
    assert!(offset_of!(WorkgroupState, local_memory_size) == 24);

    assert!(size_of::<DispatchAttrs>() == 64);
    assert!(offset_of!(DispatchAttrs, local_memory_pages) == 8);
    assert!(offset_of!(DispatchAttrs, constant_count) == 10);
    assert!(offset_of!(DispatchAttrs, binding_count) == 11);
    assert!(offset_of!(DispatchAttrs, workgroup_size_x) == 12);
    assert!(offset_of!(DispatchAttrs, workgroup_size_y) == 16);
    assert!(offset_of!(DispatchAttrs, workgroup_size_z) == 20);
    assert!(offset_of!(DispatchAttrs, parameter_count) == 22);
    assert!(offset_of!(DispatchAttrs, reserved) == 24);

    assert!(size_of::<ExportTable>() == 80);
    assert!(offset_of!(ExportTable, ptrs) == 8);
    assert!(offset_of!(ExportTable, attrs) == 16);
    assert!(offset_of!(ExportTable, params) == 24);
    assert!(offset_of!(ExportTable, occupancy) == 32);
    assert!(offset_of!(ExportTable, names) == 40);
    assert!(offset_of!(ExportTable, tags) == 48);
    assert!(offset_of!(ExportTable, parameter_names) == 56);
    assert!(offset_of!(ExportTable, source_locations) == 64);
    assert!(offset_of!(ExportTable, stage_locations) == 72);

    assert!(size_of::<LibraryV0>() == 128);
    assert!(offset_of!(LibraryV0, imports) == 8);
    assert!(offset_of!(LibraryV0, exports) == 24);
    assert!(offset_of!(LibraryV0, constants) == 104);
    assert!(offset_of!(LibraryV0, sources) == 112);
};
