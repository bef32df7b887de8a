//! Host-provided allocators: a C table of callbacks adapted to `HostAllocator`.

use std::ffi::c_void;
use std::ptr::NonNull;

use super::{check_struct_size, invalid_argument};
use crate::host::{Diagnostic, HostAllocator};

/// Callbacks of a host-provided allocator (`rtx_context_options_t::allocator`). They may be
/// called from any thread, concurrently.
#[repr(C)]
#[allow(non_camel_case_types)]
pub struct rtx_allocator_callbacks_t {
    /// `sizeof(rtx_allocator_callbacks_t)` as the caller's header knows it.
    pub struct_size: usize,
    /// Passed to every callback.
    pub user_data: *mut c_void,
    /// Required. Returns `size` (non-zero) bytes aligned to `align` (a power of two), or NULL
    /// when out of memory.
    pub allocate: Option<unsafe extern "C" fn(user_data: *mut c_void, size: usize, align: usize) -> *mut c_void>,
    /// Required. Returns memory from `allocate` with the same size and alignment.
    pub deallocate: Option<unsafe extern "C" fn(user_data: *mut c_void, ptr: *mut c_void, size: usize, align: usize)>,
    /// Optional. Called once when the context is freed and no memory from the allocator is in
    /// use by rtx any more.
    pub destroy: Option<unsafe extern "C" fn(user_data: *mut c_void)>,
}

pub(crate) struct CAllocator {
    user_data: *mut c_void,
    allocate: unsafe extern "C" fn(*mut c_void, usize, usize) -> *mut c_void,
    deallocate: unsafe extern "C" fn(*mut c_void, *mut c_void, usize, usize),
    destroy: Option<unsafe extern "C" fn(*mut c_void)>,
}

// SAFETY: the C contract says the callbacks may be called from any thread, concurrently.
unsafe impl Send for CAllocator {}
// SAFETY: as above.
unsafe impl Sync for CAllocator {}

impl CAllocator {
    /// # Safety
    /// `table` must be a readable callback table of at least `table.struct_size` bytes.
    pub(crate) unsafe fn new(table: &rtx_allocator_callbacks_t, function: &str) -> Result<CAllocator, Diagnostic> {
        check_struct_size(table.struct_size, std::mem::size_of::<rtx_allocator_callbacks_t>(), "allocator", function)?;
        let (Some(allocate), Some(deallocate)) = (table.allocate, table.deallocate) else {
            return Err(invalid_argument(format!(
                "{function}: allocator->allocate and allocator->deallocate are required"
            )));
        };
        // `destroy` is armed only once the context exists (`arm_destroy`): a failed
        // `rtx_context_new` must leave the host's allocator entirely the host's.
        Ok(CAllocator { user_data: table.user_data, allocate, deallocate, destroy: None })
    }

    /// From now on the allocator is rtx's: its `destroy` runs when the last owner lets go.
    pub(crate) fn arm_destroy(&mut self, table: &rtx_allocator_callbacks_t) {
        self.destroy = table.destroy;
    }
}

// SAFETY: memory comes from the host's allocate callback, whose contract matches ours; a
// misaligned block is handed back and reported as a failure rather than used.
unsafe impl HostAllocator for CAllocator {
    fn allocate(&self, size: usize, align: usize) -> Option<NonNull<u8>> {
        // SAFETY: the host's callback, called as documented.
        let ptr = NonNull::new(unsafe { (self.allocate)(self.user_data, size, align) }.cast::<u8>())?;
        if !(ptr.as_ptr() as usize).is_multiple_of(align) {
            // SAFETY: returning what the host just gave us, with the same size and alignment.
            unsafe { (self.deallocate)(self.user_data, ptr.as_ptr().cast(), size, align) };
            return None;
        }
        Some(ptr)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, size: usize, align: usize) {
        // SAFETY: the caller returns memory from `allocate` with its size and alignment.
        unsafe { (self.deallocate)(self.user_data, ptr.as_ptr().cast(), size, align) }
    }
}

impl Drop for CAllocator {
    fn drop(&mut self) {
        if let Some(destroy) = self.destroy {
            // SAFETY: called once, when the last owner lets go.
            unsafe { destroy(self.user_data) };
        }
    }
}
