//! The `hal` module, buffer views and host tensor I/O are written once against the backend
//! interface: a device of our own here — whose memory the host cannot map, so every host read or
//! write is a transfer it logs — runs real compiled programs through the `hal` module, and their
//! inputs and results cross to and from the host only through those transfers.

use std::any::Any;
use std::sync::{Arc, Mutex};

use rtx_hal::backend::{AllocatorBackend, DeviceBackend, Memory, QueueFences, Transfer};
use rtx_hal::buffer::{memory_type, usage, Buffer};
use rtx_hal::buffer_view::{self, BufferView, DENSE_ROW_MAJOR};
use rtx_hal::byte_range::OutOfRange;
use rtx_hal::command_buffer::{command_list, CommandBuffer, TableEntry};
use rtx_hal::device::{Allocator, Device};
use rtx_hal::executable::Executable;
use rtx_hal::file::File;
use rtx_hal_cpu::command_buffer::{self, run_transfer};
use rtx_hal_cpu::device::{submit, DeviceKind, LocalDevice};
use rtx_hal_cpu::executable::BoundBytes;
use rtx_host::{Diagnostic, StatusCode};
use rtx_runtime::{Context, ContextOptions, Module, Runtime};
use rtx_test_support::fixtures_dir;
use rtx_vm::buffer::ByteBuffer;
use rtx_vm::value::Value;

/// What crossed between host and device, in order.
type Log = Arc<Mutex<Vec<&'static str>>>;

/// Device memory: bytes only the device's queue reaches (its processor is the CPU, as an
/// emulator's would be); the host gets no mapping.
#[derive(Debug)]
struct DeviceMemory {
    bytes: Arc<ByteBuffer>,
    log: Log,
}

impl Memory for DeviceMemory {
    fn len(&self) -> usize {
        self.bytes.len()
    }

    fn mapping(&self) -> Option<&ByteBuffer> {
        None
    }

    fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), Diagnostic> {
        self.log.lock().unwrap().push("download");
        out.copy_from_slice(&self.bytes.read_bytes(offset, out.len())?);
        Ok(())
    }

    fn write(&self, offset: usize, data: &[u8]) -> Result<(), Diagnostic> {
        self.log.lock().unwrap().push("upload");
        ByteBuffer::copy(&*ByteBuffer::from_bytes(data)?, 0, &self.bytes, offset as i64, data.len() as i64)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Device-local memory with every dispatch and transfer usage, and nothing host-visible.
#[derive(Debug)]
struct DeviceAllocator {
    log: Log,
}

impl DeviceAllocator {
    fn buffer(&self, bytes: Arc<ByteBuffer>, memory_types: u32, buffer_usage: u32) -> Buffer {
        let device_usage = usage::TRANSFER
            | usage::DISPATCH_STORAGE
            | usage::DISPATCH_UNIFORM_READ
            | usage::DISPATCH_INDIRECT_PARAMETERS
            | usage::SHARING_IMMUTABLE;
        let memory = Arc::new(DeviceMemory { bytes, log: self.log.clone() });
        Buffer::new(memory, memory_types | memory_type::DEVICE_LOCAL, buffer_usage | device_usage)
    }
}

impl AllocatorBackend for DeviceAllocator {
    fn can_use(&self, buffer: &Buffer) -> bool {
        buffer.memory().as_any().is::<DeviceMemory>()
    }

    fn allocate(&self, memory_types: u32, buffer_usage: u32, length: i64) -> Result<Buffer, Diagnostic> {
        Ok(self.buffer(ByteBuffer::allocate(None, length, 64)?, memory_types, buffer_usage))
    }

    /// Host bytes are uploaded: device memory is never the host's.
    fn import(&self, bytes: Arc<ByteBuffer>, memory_types: u32, buffer_usage: u32) -> Result<Buffer, Diagnostic> {
        self.log.lock().unwrap().push("import");
        Ok(self.buffer(bytes.clone_range(None, 0, bytes.len() as i64, 64)?, memory_types, buffer_usage))
    }
}

/// How the device's command processor reaches a buffer: its own memory only.
fn device_bytes(buffer: &Buffer) -> Result<BoundBytes<'_>, Diagnostic> {
    let memory = buffer
        .memory()
        .as_any()
        .downcast_ref::<DeviceMemory>()
        .ok_or_else(|| Diagnostic::new(StatusCode::InvalidArgument, "buffer memory is not the test device's"))?;
    BoundBytes::whole(&memory.bytes)
        .range(buffer.offset() as i64, buffer.len() as i64)
        .map_err(|e: OutOfRange| e.at("device buffer"))
}

/// The test device: the CPU device's executables and command recording, its own memory, and a
/// queue that runs work when its wait fence is reached. A lossy one fails each execution's
/// signal fence instead, a moment after the submission returned, as a device whose work runs
/// elsewhere would.
#[derive(Debug)]
struct TestDevice {
    cpu: LocalDevice,
    allocator: Allocator,
    log: Log,
    lossy: bool,
}

impl DeviceBackend for TestDevice {
    fn query_i64(&self, category: &str, key: &str) -> Result<i64, Diagnostic> {
        self.cpu.query_i64(category, key)
    }

    fn allocator(&self) -> &Allocator {
        &self.allocator
    }

    fn create_executable(&self, format: &str, data: &[u8], constants: &[u32]) -> Result<Executable, Diagnostic> {
        self.cpu.create_executable(format, data, constants)
    }

    fn create_command_buffer(&self, mode: u32, binding_capacity: u32) -> Result<CommandBuffer, Diagnostic> {
        self.cpu.create_command_buffer(mode, binding_capacity)
    }

    fn queue_alloca(
        &self,
        queue: &QueueFences<'_>,
        memory_types: u32,
        buffer_usage: u32,
        size: i64,
    ) -> Result<Arc<Buffer>, Diagnostic> {
        let buffer = self.allocator.allocate(memory_types, buffer_usage, size)?;
        submit(queue, || Ok(()))?;
        Ok(Arc::new(buffer))
    }

    fn queue_dealloca(&self, queue: &QueueFences<'_>, _buffer: &Buffer) -> Result<(), Diagnostic> {
        submit(queue, || Ok(()))
    }

    fn queue_execute(
        &self,
        queue: &QueueFences<'_>,
        commands: Option<&CommandBuffer>,
        table: &[TableEntry],
    ) -> Result<(), Diagnostic> {
        self.log.lock().unwrap().push("execute");
        if self.lossy {
            let signal = queue.signal.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(20));
                signal.fail(&Diagnostic::new(StatusCode::DataLoss, "the test device lost the work"));
            });
            return Ok(());
        }
        let (commands, table) = (commands.cloned(), table.to_vec());
        submit(queue, move || match &commands {
            Some(commands) => command_buffer::execute(command_list(commands)?, &table, device_bytes, None),
            None => Ok(()),
        })
    }

    fn queue_transfer(&self, queue: &QueueFences<'_>, transfer: Transfer) -> Result<(), Diagnostic> {
        submit(queue, move || run_transfer(&transfer, &[], device_bytes))
    }

    fn queue_read(&self, _: &QueueFences<'_>, _: &File, _: i64, _: &Buffer, _: i64, _: i64) -> Result<(), Diagnostic> {
        Err(Diagnostic::new(StatusCode::Unimplemented, "the test device reads no files"))
    }

    fn queue_write(&self, _: &QueueFences<'_>, _: &Buffer, _: i64, _: &File, _: i64, _: i64) -> Result<(), Diagnostic> {
        Err(Diagnostic::new(StatusCode::Unimplemented, "the test device writes no files"))
    }

    fn queue_flush(&self) -> Result<(), Diagnostic> {
        Ok(())
    }
}

fn test_device(log: &Log) -> Device {
    let allocator = Allocator::new(Arc::new(DeviceAllocator { log: log.clone() }));
    Device::new(Arc::new(TestDevice {
        cpu: LocalDevice::new(DeviceKind::LocalSync),
        allocator,
        log: log.clone(),
        lossy: false,
    }))
}

fn context(format: &str, device: Device) -> Context {
    let path = fixtures_dir().join(format!("hal_run/programs_{format}.vmfb"));
    let module = Module::load_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let context = Runtime::with_task_workers(1).context_with(ContextOptions::from_spec("s").unwrap()).unwrap();
    context.add_hal_device(device).unwrap();
    context.add_module(&module).unwrap();
    context
}

/// A tensor in the device's memory, uploaded from host `values`.
fn upload(device: &Device, shape: &[i64], values: &[i32]) -> Value {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let allocator = rtx_hal::device::deref_allocator(device.allocator()).unwrap();
    let buffer = allocator.allocate(memory_type::DEVICE_LOCAL, usage::TRANSFER, bytes.len() as i64).unwrap();
    buffer.write(0, &bytes).unwrap();
    let view = BufferView::new(buffer.into_ref(), shape.to_vec(), I32, DENSE_ROW_MAJOR).unwrap();
    Value::Ref(Some(view.into_ref()))
}

const I32: u32 = 0x1000_0020;

#[test]
fn compiled_programs_run_on_a_device_whose_memory_the_host_cannot_map() {
    for format in ["vmvx", "embedded", "system"] {
        let log = Log::default();
        let device = test_device(&log);
        let a = upload(&device, &[2, 3], &[1, 2, 3, 4, 5, i32::MAX]);
        let b = upload(&device, &[2, 3], &[10, 20, 30, 40, 50, 1]);
        let context = context(format, device);
        let add = context.function("add").unwrap().as_vm().unwrap().handle.clone();
        let results = context.call(&add, vec![a, b]).unwrap_or_else(|e| panic!("{format}: {e}"));
        let [Value::Ref(Some(result))] = &results[..] else { panic!("{format}: add returned {results:?}") };
        let view = buffer_view::deref(result).unwrap();
        assert!(view.buffer().memory().mapping().is_none(), "{format}: the result is in device memory");
        let sums: Vec<i32> =
            view.to_vec().unwrap().chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!((view.shape(), &sums[..]), (&[2, 3][..], &[11, 22, 33, 44, 55, i32::MIN][..]), "{format}");
        assert_eq!(
            *log.lock().unwrap(),
            ["upload", "upload", "execute", "download"],
            "{format}: inputs went up by transfers, the program ran on the test device's queue, the result \
             came down by a transfer"
        );
    }
}

/// Queue work that fails after the program reached its wait: the call fails with the fence's
/// error, as under IREE, not with a status code the program words itself.
#[test]
fn a_fence_that_fails_while_awaited_fails_the_call_with_its_error() {
    let log = Log::default();
    let allocator = Allocator::new(Arc::new(DeviceAllocator { log: log.clone() }));
    let device = Device::new(Arc::new(TestDevice {
        cpu: LocalDevice::new(DeviceKind::LocalSync),
        allocator,
        log: log.clone(),
        lossy: true,
    }));
    let a = upload(&device, &[2, 3], &[1, 2, 3, 4, 5, 6]);
    let b = upload(&device, &[2, 3], &[10, 20, 30, 40, 50, 60]);
    let context = context("embedded", device);
    let add = context.function("add").unwrap().as_vm().unwrap().handle.clone();
    let error = context.call(&add, vec![a, b]).unwrap_err();
    assert_eq!(error.code, StatusCode::DataLoss, "{error}");
    assert!(error.to_string().contains("the test device lost the work"), "{error}");
}

#[test]
fn host_tensors_in_device_memory_print_through_transfers() {
    let log = Log::default();
    let device = test_device(&log);
    let Value::Ref(Some(tensor)) = upload(&device, &[3], &[7, -1, 5]) else { unreachable!() };
    let view = buffer_view::deref(&tensor).unwrap();
    assert_eq!(rtx_hal::run_io::host_tensor(view).unwrap().format(16).unwrap(), "3xi32=7 -1 5");
    assert!(view.buffer().memory().mapping().is_none());
    assert_eq!(*log.lock().unwrap(), ["upload", "download"]);
}
