//! `vmvx-bytecode-fb` executables: the data is itself a `.vmfb` whose exports are dispatch
//! functions, run by our VM once per workgroup with the calling convention IREE's VMVX loader
//! uses: `(local_memory, constants, bindings: list<buffer>, workgroup id xyz, workgroup size xyz,
//! workgroup count xyz)`. Executables compiled with microkernels also import the `vmvx` module
//! (see [`super::vmvx_kernels`]).

use std::sync::{Arc, Mutex, PoisonError};

use super::executable::{Dispatch, ExecutableCode};
use super::vmvx_kernels::{self, VmvxModule};
use rtx_host::{Diagnostic, StatusCode};
use rtx_vm::buffer::ByteBuffer;
use rtx_vm::context::{FunctionHandle, VmContext};
use rtx_vm::list::{List, ListElementType};
use rtx_vm::refs::Ref;
use rtx_vm::value::Value;
use rtx_vm::Module;

/// The format string `hal.executable.create` names.
pub const FORMAT: &str = "vmvx-bytecode-fb";

/// The calling convention every dispatch function must have.
const ENTRY_CCONV: &str = "0rrriiiiiiiii_v";

/// Exports that are not dispatch functions.
const LIFECYCLE: [&str; 3] = ["__init", "__deinit", "__set_constants"];

/// A loaded VMVX executable.
#[derive(Debug)]
pub struct VmvxExecutable {
    names: Vec<String>,
    entries: Vec<Entry>,
    /// The inner module's context; one dispatch runs at a time through it.
    context: Mutex<VmContext>,
}

#[derive(Debug)]
struct Entry {
    function: FunctionHandle,
    /// ByteBuffer of workgroup local memory the function asks for (`local_memory` attribute).
    local_memory: usize,
}

impl VmvxExecutable {
    /// Loads `data` (a `.vmfb`) and hands it the executable-level `constants`.
    pub fn load(data: &[u8], constants: &[u32]) -> Result<VmvxExecutable, Diagnostic> {
        let invalid =
            |message: String| Diagnostic::new(StatusCode::InvalidArgument, format!("vmvx executable: {message}"));
        let module = Module::load_memory(data).map_err(|e| invalid(e.to_string()))?;
        let mut dispatch_exports = Vec::new();
        for export in module.exported_functions() {
            if LIFECYCLE.contains(&export.local_name.as_str()) {
                continue;
            }
            let signature = module.export_signature(export);
            let cconv = signature.and_then(|s| s.calling_convention.as_deref()).unwrap_or("");
            if cconv != ENTRY_CCONV {
                return Err(invalid(format!(
                    "entry point `{}` has calling convention `{cconv}`, expected `{ENTRY_CCONV}`",
                    export.local_name
                )));
            }
            let local_memory = match signature.and_then(|s| s.attr("local_memory")) {
                None => 0,
                Some(text) => text.parse().map_err(|_| {
                    invalid(format!("entry point `{}`: local_memory `{text}` is not a size", export.local_name))
                })?,
            };
            dispatch_exports.push((export.local_name.clone(), local_memory));
        }
        let has_set_constants = module.lookup_export("__set_constants").is_some();
        let context = VmContext::new();
        // Executables compiled with --iree-vmvx-enable-microkernels call the `vmvx` module.
        if module.dependencies().iter().any(|d| d.name == vmvx_kernels::NAME) {
            context.add_native_module(Arc::new(VmvxModule::new()))?;
        }
        context.add_module(Arc::new(module))?;
        match (has_set_constants, constants.is_empty()) {
            (true, _) => {
                let bytes: Vec<u8> = constants.iter().flat_map(|c| c.to_le_bytes()).collect();
                let set = context.lookup("__set_constants")?;
                context.invoke(&set, vec![Value::Ref(Some(Ref::Buffer(ByteBuffer::from_bytes(&bytes)?)))])?;
            }
            (false, false) => {
                return Err(invalid(format!(
                    "executable has no executable-level constants but {} constants were provided",
                    constants.len()
                )))
            }
            (false, true) => {}
        }
        let mut names = Vec::with_capacity(dispatch_exports.len());
        let mut entries = Vec::with_capacity(dispatch_exports.len());
        for (name, local_memory) in dispatch_exports {
            entries.push(Entry { function: context.lookup(&name)?, local_memory });
            names.push(name);
        }
        Ok(VmvxExecutable { names, entries, context: Mutex::new(context) })
    }
}

impl ExecutableCode for VmvxExecutable {
    fn export_names(&self) -> &[String] {
        &self.names
    }

    fn dispatch(&self, dispatch: &Dispatch<'_>) -> Result<(), Diagnostic> {
        let entry = &self.entries[dispatch.export];
        let constants: Vec<u8> = dispatch.constants.iter().flat_map(|c| c.to_le_bytes()).collect();
        let constants = Ref::Buffer(ByteBuffer::from_bytes(&constants)?);
        let bindings =
            List::new(ListElementType::from_list_type_name("!vm.list<!vm.buffer>")?, dispatch.bindings.len() as i32)?;
        for binding in dispatch.bindings {
            bindings.push(Value::Ref(Some(Ref::Buffer(binding.span()?))))?;
        }
        let bindings = Ref::List(bindings);
        let local_memory = Ref::Buffer(ByteBuffer::allocate(None, entry.local_memory as i64, 64)?);
        let context = self.context.lock().unwrap_or_else(PoisonError::into_inner);
        let [count_x, count_y, count_z] = dispatch.workgroup_count;
        for z in 0..count_z {
            for y in 0..count_y {
                for x in 0..count_x {
                    let arguments = vec![
                        Value::Ref(Some(local_memory.clone())),
                        Value::Ref(Some(constants.clone())),
                        Value::Ref(Some(bindings.clone())),
                        Value::I32(x as i32),
                        Value::I32(y as i32),
                        Value::I32(z as i32),
                        Value::I32(1),
                        Value::I32(1),
                        Value::I32(1),
                        Value::I32(count_x as i32),
                        Value::I32(count_y as i32),
                        Value::I32(count_z as i32),
                    ];
                    context.invoke(&entry.function, arguments)?;
                }
            }
        }
        Ok(())
    }
}
