//! A loaded CPU executable seen through the library ABI: what the query function returned,
//! validated once at load (version, exports, imports, constants) and copied into Rust values, so
//! that dispatching only checks what changes per dispatch.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::marker::PhantomData;
use std::mem::MaybeUninit;

use super::abi::{
    DispatchFn, DispatchState, Environment, ImportFn, LibraryHeader, LibraryV0, Processor, QueryFn, WorkgroupState,
    DISPATCH_FLAG_SEQUENTIAL, DISPATCH_FLAG_WORKGROUP_SIZE_DYNAMIC, LIBRARY_QUERY_SYMBOL, LIBRARY_VERSION,
    LOCAL_MEMORY_PAGE_SIZE, MAX_BINDING_COUNT, MAX_CONSTANT_COUNT,
};
use super::cpu;
use super::elf::{ElfError, ElfModule};
use super::system_library::{SystemLibrary, SystemLibraryError};

/// Bounds on the tables a library reports, so a corrupt count cannot send us reading gigabytes.
const MAX_EXPORT_COUNT: u32 = 1 << 16;
const MAX_IMPORT_COUNT: u32 = 1 << 16;

/// The executable formats of IREE's llvm-cpu backend on x86-64, as named in a `.vmfb`'s
/// executable table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecutableFormat {
    /// `embedded-elf-x86_64`, the default: loaded by [`ElfModule`].
    EmbeddedElf,
    /// `system-elf-x86_64` (`--iree-llvmcpu-link-embedded=false`): loaded by [`SystemLibrary`].
    SystemElf,
}

impl ExecutableFormat {
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "embedded-elf-x86_64" => Some(ExecutableFormat::EmbeddedElf),
            "system-elf-x86_64" => Some(ExecutableFormat::SystemElf),
            _ => None,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            ExecutableFormat::EmbeddedElf => "embedded-elf-x86_64",
            ExecutableFormat::SystemElf => "system-elf-x86_64",
        }
    }
}

/// A function the host offers to executables' import tables.
#[derive(Clone, Copy, Debug)]
pub struct ImportFunction {
    pub function: ImportFn,
    /// Passed back to `function` on every call.
    pub context: *const c_void,
}

/// Resolves import names (without their `?` marker) to host functions. Dispatches run on many
/// threads at once, so the functions and their contexts must be safe to call concurrently.
pub trait ImportProvider {
    fn resolve(&self, name: &str) -> Option<ImportFunction>;
}

impl<F: Fn(&str) -> Option<ImportFunction>> ImportProvider for F {
    fn resolve(&self, name: &str) -> Option<ImportFunction> {
        self(name)
    }
}

/// Why an executable could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LibraryError {
    #[error(transparent)]
    Elf(#[from] ElfError),
    #[error(transparent)]
    System(#[from] SystemLibraryError),
    #[error("the executable supports no library version up to {LIBRARY_VERSION} (its query returned null)")]
    VersionRejected,
    #[error("the executable's library is version {0}; only version {LIBRARY_VERSION} is supported")]
    Version(u32),
    #[error("the executable is built for sanitizer {0}, which this runtime does not host")]
    Sanitizer(i32),
    #[error("malformed library: {0}")]
    Malformed(String),
    #[error("the executable needs {expected} constants but {given} were provided")]
    ConstantCount { expected: u32, given: usize },
    #[error("the executable imports `{0}`, which the runtime does not provide")]
    UnresolvedImport(String),
}

/// An export's dispatch attributes, as the library declares them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportInfo {
    pub name: String,
    pub workgroup_size: [u32; 3],
    pub constant_count: usize,
    pub binding_count: usize,
    /// Bytes of workgroup local memory each workgroup needs.
    pub local_memory_size: usize,
    /// Neighbouring workgroups touch neighbouring data: worth scheduling together.
    pub sequential: bool,
    /// The workgroup size is a minimum and granularity rather than fixed.
    pub workgroup_size_dynamic: bool,
}

/// What holds the code alive: dropped after everything that points into it.
enum LoadedCode {
    Embedded(ElfModule),
    System(SystemLibrary),
}

impl LoadedCode {
    fn query_address(&self) -> usize {
        match self {
            LoadedCode::Embedded(module) => module.symbol_address(),
            LoadedCode::System(library) => library.symbol_address(),
        }
    }
}

/// A loaded executable: its exports, ready to dispatch. Unloaded on drop.
pub struct ExecutableLibrary {
    name: String,
    format: ExecutableFormat,
    exports: Vec<ExportInfo>,
    dispatch_fns: Vec<DispatchFn>,
    imports: Vec<String>,
    /// Boxed so its address, which the library may keep, never changes.
    environment: Box<Environment>,
    // What `environment` points at.
    _import_funcs: Box<[Option<ImportFn>]>,
    _import_contexts: Box<[*const c_void]>,
    _constants: Box<[u32]>,
    _code: LoadedCode,
}

// SAFETY: the library's tables are immutable after load; dispatch functions are reentrant by the
// ABI's contract (workgroups of one dispatch run concurrently), and import providers promise the
// same of their functions and contexts.
unsafe impl Send for ExecutableLibrary {}
// SAFETY: as above; `&self` methods only read.
unsafe impl Sync for ExecutableLibrary {}

impl ExecutableLibrary {
    /// Loads `bytes` in `format`, queries its library, checks it and resolves its imports.
    /// `constants` are the executable-level constants the library declares it needs.
    ///
    /// # Safety
    /// Runs code from `bytes` (initializers, the query function): the caller trusts it, e.g.
    /// because `iree-compile` produced it. Malformed files are still rejected before any of it runs.
    pub unsafe fn load(
        format: ExecutableFormat,
        bytes: &[u8],
        constants: &[u32],
        imports: &dyn ImportProvider,
    ) -> Result<Self, LibraryError> {
        let code = match format {
            ExecutableFormat::EmbeddedElf => {
                let module = ElfModule::load(bytes, LIBRARY_QUERY_SYMBOL)?;
                // SAFETY: the caller trusts the executable's code.
                unsafe { module.run_initializers() };
                LoadedCode::Embedded(module)
            }
            // SAFETY: the caller trusts the executable's code.
            ExecutableFormat::SystemElf => {
                LoadedCode::System(unsafe { SystemLibrary::load(bytes, LIBRARY_QUERY_SYMBOL)? })
            }
        };
        let constants: Box<[u32]> = constants.into();
        let mut environment = Box::new(Environment {
            constants: if constants.is_empty() { std::ptr::null() } else { constants.as_ptr() },
            import_thunk: Some(call_import),
            import_funcs: std::ptr::null(),
            import_contexts: std::ptr::null(),
            processor: cpu::host_processor(),
        });
        // SAFETY: the address is the non-null, loaded `iree_hal_executable_library_query`, whose
        // C signature `QueryFn` transcribes; it stays loaded as long as `code`.
        let query: QueryFn = unsafe { std::mem::transmute::<usize, QueryFn>(code.query_address()) };
        // SAFETY: calling the trusted query function with a live environment.
        let header_ref = unsafe { query(LIBRARY_VERSION, &*environment) };
        if header_ref.is_null() {
            return Err(LibraryError::VersionRejected);
        }
        // SAFETY: non-null, so it points at the library's header pointer (the first field of
        // its `LibraryV0`), in memory that lives as long as `code`.
        let header: &LibraryHeader = unsafe { (*header_ref).as_ref() }
            .ok_or_else(|| LibraryError::Malformed("the query returned a null header".to_string()))?;
        if header.version != LIBRARY_VERSION {
            return Err(LibraryError::Version(header.version));
        }
        if header.sanitizer != 0 {
            return Err(LibraryError::Sanitizer(header.sanitizer));
        }
        // SAFETY: a version-6 header is the first field of a `LibraryV0`.
        let library: &LibraryV0 = unsafe { &*header_ref.cast::<LibraryV0>() };
        // SAFETY: the header's name is a C string in the library's read-only data.
        let name = unsafe { c_string(header.name) }.unwrap_or_default();
        if library.constants.count as usize != constants.len() {
            return Err(LibraryError::ConstantCount { expected: library.constants.count, given: constants.len() });
        }
        // SAFETY: the tables come from the trusted library and are read within their counts.
        let (exports, dispatch_fns) = unsafe { read_exports(library) }?;
        // SAFETY: as above.
        let import_names = unsafe { read_imports(library) }?;

        let mut import_funcs = Vec::with_capacity(import_names.len());
        let mut import_contexts = Vec::with_capacity(import_names.len());
        for symbol in &import_names {
            let (optional, name) = match symbol.strip_prefix('?') {
                Some(name) => (true, name),
                None => (false, symbol.as_str()),
            };
            match imports.resolve(name) {
                Some(import) => {
                    import_funcs.push(Some(import.function));
                    import_contexts.push(import.context);
                }
                None if optional => {
                    import_funcs.push(None);
                    import_contexts.push(std::ptr::null());
                }
                None => return Err(LibraryError::UnresolvedImport(name.to_string())),
            }
        }
        let import_funcs: Box<[Option<ImportFn>]> = import_funcs.into();
        let import_contexts: Box<[*const c_void]> = import_contexts.into();
        environment.import_funcs = import_funcs.as_ptr();
        environment.import_contexts = import_contexts.as_ptr();
        Ok(ExecutableLibrary {
            name,
            format,
            exports,
            dispatch_fns,
            imports: import_names,
            environment,
            _import_funcs: import_funcs,
            _import_contexts: import_contexts,
            _constants: constants,
            _code: code,
        })
    }

    /// The library's name (for diagnostics; the module's executable name).
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn format(&self) -> ExecutableFormat {
        self.format
    }

    /// Exports in ordinal order, the order dispatches name them by.
    pub fn exports(&self) -> &[ExportInfo] {
        &self.exports
    }

    pub fn export_ordinal(&self, name: &str) -> Option<usize> {
        self.exports.iter().position(|export| export.name == name)
    }

    /// The import table's symbols as declared, optional ones with their leading `?`.
    pub fn imports(&self) -> &[String] {
        &self.imports
    }

    /// The processor description handed to the executable.
    pub fn processor(&self) -> &Processor {
        &self.environment.processor
    }

    /// Checks a dispatch of export `export` against its attributes and fixes its arguments;
    /// the workgroups are then run with [`PreparedDispatch::run_workgroup`]. Nothing is
    /// allocated: the arguments are copied into the prepared dispatch. Where a dispatch is
    /// prepared for every call, [`ExecutableLibrary::empty_dispatch`] and
    /// [`PreparedDispatch::prepare`] fill it in place instead of moving its kilobyte here.
    pub fn prepare_dispatch<'a, B>(
        &'a self,
        export: usize,
        workgroup_count: [u32; 3],
        constants: &[u32],
        bindings: B,
    ) -> Result<PreparedDispatch<'a>, DispatchError>
    where
        B: IntoIterator<Item = Binding<'a>>,
        B::IntoIter: ExactSizeIterator,
    {
        let mut prepared = self.empty_dispatch();
        prepared.prepare(export, workgroup_count, constants, bindings)?;
        Ok(prepared)
    }

    /// A dispatch of no workgroups, to be filled in place by [`PreparedDispatch::prepare`].
    /// Its arguments are left unset (only what the export reads is ever written): so it costs
    /// a few stores, not a kilobyte.
    #[inline(always)]
    pub fn empty_dispatch(&self) -> PreparedDispatch<'_> {
        PreparedDispatch {
            library: self,
            export: 0,
            workgroup_count: [0; 3],
            max_concurrency: 1,
            constants: [MaybeUninit::uninit(); MAX_CONSTANT_COUNT],
            binding_ptrs: [MaybeUninit::uninit(); MAX_BINDING_COUNT],
            binding_lengths: [MaybeUninit::uninit(); MAX_BINDING_COUNT],
            _buffers: PhantomData,
        }
    }
}

/// A buffer bound to a dispatch.
#[derive(Debug)]
pub struct Binding<'a> {
    ptr: *mut c_void,
    len: usize,
    _buffer: PhantomData<&'a mut [u8]>,
}

impl<'a> Binding<'a> {
    pub fn new(buffer: &'a mut [u8]) -> Self {
        Binding { ptr: buffer.as_mut_ptr().cast(), len: buffer.len(), _buffer: PhantomData }
    }

    /// Binds memory Rust cannot lend as `&mut [u8]`, e.g. one buffer bound twice at different
    /// offsets, which dispatches do.
    ///
    /// # Safety
    /// `ptr..ptr+len` must stay valid for reads and writes while the dispatch that binds it runs.
    pub unsafe fn from_raw_parts(ptr: *mut u8, len: usize) -> Self {
        Binding { ptr: ptr.cast(), len, _buffer: PhantomData }
    }
}

/// Why a dispatch could not run, or failed.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum DispatchError {
    #[error("export {export} does not exist (the executable has {count})")]
    NoSuchExport { export: usize, count: usize },
    #[error("`{export}` takes {expected} constants, not {given}")]
    ConstantCount { export: String, expected: usize, given: usize },
    #[error("`{export}` takes {expected} bindings, not {given}")]
    BindingCount { export: String, expected: usize, given: usize },
    #[error("workgroup count Z {0} exceeds 65535")]
    WorkgroupCountZ(u32),
    #[error("workgroup {id:?} is outside the dispatch's {count:?} workgroups")]
    WorkgroupOutOfRange { id: [u32; 3], count: [u32; 3] },
    #[error("`{export}` needs {needed} bytes of workgroup local memory, {given} were provided")]
    LocalMemory { export: String, needed: usize, given: usize },
    #[error("`{export}` failed in workgroup {workgroup:?} with status {status}")]
    Failed { export: String, workgroup: [u32; 3], status: i32 },
}

/// One dispatch, its arguments fixed; its workgroups may run on several threads at once. The
/// arguments are held inline (up to the ABI's limits), so preparing a dispatch allocates nothing.
pub struct PreparedDispatch<'a> {
    library: &'a ExecutableLibrary,
    export: usize,
    workgroup_count: [u32; 3],
    max_concurrency: u8,
    /// The first `constant_count` entries of the export are set, the rest never read.
    constants: [MaybeUninit<u32>; MAX_CONSTANT_COUNT],
    /// The first `binding_count` entries of the export are set, the rest never read.
    binding_ptrs: [MaybeUninit<*mut c_void>; MAX_BINDING_COUNT],
    binding_lengths: [MaybeUninit<usize>; MAX_BINDING_COUNT],
    _buffers: PhantomData<&'a mut [u8]>,
}

// SAFETY: the raw pointers refer to buffers lent for 'a; workgroups of one dispatch may run
// concurrently by the ABI's contract (each writes its own part of the outputs).
unsafe impl Send for PreparedDispatch<'_> {}
// SAFETY: as above; `run_workgroup` takes `&self` and mutates nothing of ours.
unsafe impl Sync for PreparedDispatch<'_> {}

impl<'a> PreparedDispatch<'a> {
    /// Checks a dispatch of export `export` of this dispatch's library against the export's
    /// attributes and fixes its arguments here. On an error the dispatch is left as it was.
    /// Always inlined: out of line, its checks cost the digits MLP 80 instructions a dispatch.
    #[inline(always)]
    pub fn prepare<B>(
        &mut self,
        export: usize,
        workgroup_count: [u32; 3],
        constants: &[u32],
        bindings: B,
    ) -> Result<(), DispatchError>
    where
        B: IntoIterator<Item = Binding<'a>>,
        B::IntoIter: ExactSizeIterator,
    {
        let bindings = bindings.into_iter();
        let exports = &self.library.exports;
        let info = exports.get(export).ok_or(DispatchError::NoSuchExport { export, count: exports.len() })?;
        if constants.len() != info.constant_count {
            return Err(DispatchError::ConstantCount {
                export: info.name.clone(),
                expected: info.constant_count,
                given: constants.len(),
            });
        }
        if bindings.len() != info.binding_count {
            return Err(DispatchError::BindingCount {
                export: info.name.clone(),
                expected: info.binding_count,
                given: bindings.len(),
            });
        }
        u16::try_from(workgroup_count[2]).map_err(|_| DispatchError::WorkgroupCountZ(workgroup_count[2]))?;
        // The counts equal the export's, which load checked against the limits of 64. Only
        // that many entries are written: the executable reads no more (zero-filling the rest
        // cost the digits MLP 90 instructions a dispatch).
        for (slot, &constant) in self.constants.iter_mut().zip(constants) {
            slot.write(constant);
        }
        for (index, binding) in bindings.enumerate() {
            self.binding_ptrs[index].write(binding.ptr);
            self.binding_lengths[index].write(binding.len);
        }
        self.export = export;
        self.workgroup_count = workgroup_count;
        Ok(())
    }

    /// How many workgroups the caller may run at once (a hint some executables size work by);
    /// 1 unless set.
    pub fn set_max_concurrency(&mut self, max_concurrency: u8) {
        self.max_concurrency = max_concurrency;
    }

    pub fn workgroup_count(&self) -> [u32; 3] {
        self.workgroup_count
    }

    /// Bytes of workgroup local memory each concurrently running workgroup needs.
    pub fn local_memory_size(&self) -> usize {
        self.library.exports.get(self.export).map_or(0, |export| export.local_memory_size)
    }

    /// Runs one workgroup on the calling thread.
    ///
    /// # Safety
    /// Runs the executable's code, which trusts its arguments: the bindings and constants must
    /// be the sizes and values the export was compiled to expect (e.g. a dynamic dimension in the
    /// constants must not exceed what the bindings hold). Workgroups running at once must use
    /// different `local_memory`.
    pub unsafe fn run_workgroup(
        &self,
        workgroup_id: [u32; 3],
        processor_id: u32,
        local_memory: &mut [u8],
    ) -> Result<(), DispatchError> {
        // First: an empty dispatch has no workgroups (and its library perhaps no exports).
        if workgroup_id.iter().zip(self.workgroup_count).any(|(&id, count)| id >= count) {
            return Err(DispatchError::WorkgroupOutOfRange { id: workgroup_id, count: self.workgroup_count });
        }
        let export = &self.library.exports[self.export];
        if local_memory.len() < export.local_memory_size {
            return Err(DispatchError::LocalMemory {
                export: export.name.clone(),
                needed: export.local_memory_size,
                given: local_memory.len(),
            });
        }
        let workgroup = WorkgroupState {
            workgroup_id_x: workgroup_id[0],
            workgroup_id_y: workgroup_id[1],
            // Below the Z count, which was checked to fit 16 bits.
            workgroup_id_z: workgroup_id[2] as u16,
            reserved: 0,
            processor_id,
            local_memory: if local_memory.is_empty() { std::ptr::null_mut() } else { local_memory.as_mut_ptr().cast() },
            local_memory_size: u32::try_from(local_memory.len()).unwrap_or(u32::MAX),
        };
        // The narrowing casts are lossless: the Z sizes were checked to fit 16 bits (the
        // workgroup size by load, the count by `prepare_dispatch`), and the counts are at most 64.
        let state = DispatchState {
            workgroup_size_x: export.workgroup_size[0],
            workgroup_size_y: export.workgroup_size[1],
            workgroup_size_z: export.workgroup_size[2] as u16,
            constant_count: export.constant_count as u16,
            workgroup_count_x: self.workgroup_count[0],
            workgroup_count_y: self.workgroup_count[1],
            workgroup_count_z: self.workgroup_count[2] as u16,
            max_concurrency: self.max_concurrency,
            binding_count: export.binding_count as u8,
            // The executable reads `constant_count` and `binding_count` entries, all set.
            constants: self.constants.as_ptr().cast(),
            binding_ptrs: self.binding_ptrs.as_ptr().cast(),
            binding_lengths: self.binding_lengths.as_ptr().cast(),
        };
        let dispatch = self.library.dispatch_fns[self.export];
        // SAFETY: a dispatch function of the loaded library, called with its environment, this
        // dispatch's state and a workgroup inside it; the caller vouches for the arguments.
        let status = unsafe { dispatch(&*self.library.environment, &state, &workgroup) };
        if status == 0 {
            Ok(())
        } else {
            Err(DispatchError::Failed { export: export.name.clone(), workgroup: workgroup_id, status })
        }
    }

    /// Runs every workgroup in order (X fastest) on the calling thread: the inline path.
    ///
    /// # Safety
    /// As for [`PreparedDispatch::run_workgroup`].
    pub unsafe fn run_all_workgroups(&self, local_memory: &mut [u8]) -> Result<(), DispatchError> {
        let [count_x, count_y, count_z] = self.workgroup_count;
        for z in 0..count_z {
            for y in 0..count_y {
                for x in 0..count_x {
                    // SAFETY: forwarded from the caller.
                    unsafe { self.run_workgroup([x, y, z], 0, local_memory) }?;
                }
            }
        }
        Ok(())
    }
}

/// The import thunk handed to executables: a plain call, since host and executable share the
/// System V calling convention.
unsafe extern "C" fn call_import(
    function: ImportFn,
    params: *mut c_void,
    context: *mut c_void,
    reserved: *mut c_void,
) -> c_int {
    // SAFETY: the executable calls an import it was given, with the arguments it was compiled
    // to pass.
    unsafe { function(params, context, reserved) }
}

/// Copies a C string out of the library.
///
/// # Safety
/// `text` must be null or a NUL-terminated string.
unsafe fn c_string(text: *const c_char) -> Option<String> {
    if text.is_null() {
        return None;
    }
    // SAFETY: non-null and NUL-terminated per the caller.
    Some(unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned())
}

/// Reads and checks the export table.
///
/// # Safety
/// `library` must be what a trusted query function returned.
unsafe fn read_exports(library: &LibraryV0) -> Result<(Vec<ExportInfo>, Vec<DispatchFn>), LibraryError> {
    let table = &library.exports;
    if table.count > MAX_EXPORT_COUNT {
        return Err(LibraryError::Malformed(format!("{} exports (limit {MAX_EXPORT_COUNT})", table.count)));
    }
    let count = table.count as usize;
    if count > 0 && (table.ptrs.is_null() || table.attrs.is_null() || table.names.is_null()) {
        return Err(LibraryError::Malformed("the export table lacks functions, attributes or names".to_string()));
    }
    let mut exports = Vec::with_capacity(count);
    let mut functions = Vec::with_capacity(count);
    for ordinal in 0..count {
        // SAFETY: the three arrays are non-null and have `count` entries each.
        let (function, attrs, name) =
            unsafe { (*table.ptrs.add(ordinal), *table.attrs.add(ordinal), *table.names.add(ordinal)) };
        // SAFETY: export names are C strings in the library's data.
        let name = unsafe { c_string(name) }
            .filter(|name| !name.is_empty())
            .ok_or_else(|| LibraryError::Malformed(format!("export {ordinal} has no name")))?;
        let function =
            function.ok_or_else(|| LibraryError::Malformed(format!("export {ordinal} (`{name}`) has no function")))?;
        if usize::from(attrs.constant_count) > MAX_CONSTANT_COUNT
            || usize::from(attrs.binding_count) > MAX_BINDING_COUNT
        {
            return Err(LibraryError::Malformed(format!(
                "export `{name}` takes {} constants and {} bindings (limits {MAX_CONSTANT_COUNT} and {MAX_BINDING_COUNT})",
                attrs.constant_count, attrs.binding_count
            )));
        }
        exports.push(ExportInfo {
            name,
            workgroup_size: [attrs.workgroup_size_x, attrs.workgroup_size_y, attrs.workgroup_size_z.into()],
            constant_count: attrs.constant_count.into(),
            binding_count: attrs.binding_count.into(),
            local_memory_size: usize::from(attrs.local_memory_pages) * LOCAL_MEMORY_PAGE_SIZE,
            sequential: attrs.flags & DISPATCH_FLAG_SEQUENTIAL != 0,
            workgroup_size_dynamic: attrs.flags & DISPATCH_FLAG_WORKGROUP_SIZE_DYNAMIC != 0,
        });
        functions.push(function);
    }
    Ok((exports, functions))
}

/// Reads the import table's symbols.
///
/// # Safety
/// `library` must be what a trusted query function returned.
unsafe fn read_imports(library: &LibraryV0) -> Result<Vec<String>, LibraryError> {
    let table = &library.imports;
    if table.count > MAX_IMPORT_COUNT {
        return Err(LibraryError::Malformed(format!("{} imports (limit {MAX_IMPORT_COUNT})", table.count)));
    }
    if table.count > 0 && table.symbols.is_null() {
        return Err(LibraryError::Malformed("the import table lacks symbols".to_string()));
    }
    (0..table.count as usize)
        .map(|ordinal| {
            // SAFETY: `symbols` is non-null with `count` entries, each a C string or null.
            unsafe { c_string(*table.symbols.add(ordinal)) }
                .filter(|name| !name.is_empty() && name != "?")
                .ok_or_else(|| LibraryError::Malformed(format!("import {ordinal} has no name")))
        })
        .collect()
}
