//! The `system-elf-x86_64` executables (`iree-compile --iree-llvmcpu-link-embedded=false`):
//! ordinary shared objects, loaded with the platform's `dlopen` so that debuggers, profilers and
//! sanitizers see them as real libraries. They may reference libc/libm symbols (`fmaf`, `floorf`)
//! that the dynamic linker resolves against the process.
//!
//! Those math symbols come with no DT_NEEDED entry: IREE's own tools link libm, so the compiler
//! assumes the host process provides it. A Rust host need not, so libm is opened with
//! `RTLD_GLOBAL` before the first system executable.
//!
//! `dlopen` wants a path, so the bytes go into an anonymous `memfd` opened through
//! `/proc/self/fd/N`; where memfd is unavailable (old kernels, seccomp) a temporary file is written
//! and removed as soon as it is open.

use std::ffi::{c_void, CStr, CString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

/// Why a system library could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SystemLibraryError {
    #[error("could not stage the library for dlopen: {0}")]
    Stage(#[source] io::Error),
    #[error("dlopen failed: {0}")]
    Open(String),
    #[error("the library does not export `{0}`")]
    MissingSymbol(String),
}

/// A `dlopen`ed library; `dlclose`d on drop.
pub struct SystemLibrary {
    handle: NonNull<c_void>,
    symbol: NonNull<c_void>,
    /// Kept open until after `dlclose`: the dynamic linker recognises loaded libraries by the
    /// path string, so a `/proc/self/fd/N` whose descriptor was closed and reused for another
    /// executable while this one is loaded would hand back this library instead.
    _staged: Staged,
}

// SAFETY: dlopen handles may be used and closed from any thread.
unsafe impl Send for SystemLibrary {}
// SAFETY: shared references only read the handle and the symbol address.
unsafe impl Sync for SystemLibrary {}

impl SystemLibrary {
    /// Opens `bytes` with `dlopen(RTLD_NOW | RTLD_LOCAL)` and resolves `symbol`.
    ///
    /// # Safety
    /// `dlopen` runs the library's initializers: the caller trusts its code.
    pub unsafe fn load(bytes: &[u8], symbol: &str) -> Result<Self, SystemLibraryError> {
        let symbol_name = CString::new(symbol).map_err(|_| SystemLibraryError::MissingSymbol(symbol.to_string()))?;
        provide_libm();
        let staged = Staged::new(bytes).map_err(SystemLibraryError::Stage)?;
        // SAFETY: the path is a valid C string; the caller accepts running the library's code.
        let handle = unsafe { libc::dlopen(staged.path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        let handle = NonNull::new(handle).ok_or_else(|| SystemLibraryError::Open(last_dl_error()))?;
        // SAFETY: `handle` came from a successful dlopen and the name is a valid C string.
        let address = unsafe { libc::dlsym(handle.as_ptr(), symbol_name.as_ptr()) };
        match NonNull::new(address) {
            Some(symbol) => Ok(SystemLibrary { handle, symbol, _staged: staged }),
            None => {
                // SAFETY: closing the handle we just opened; nothing refers into the library yet.
                unsafe { libc::dlclose(handle.as_ptr()) };
                Err(SystemLibraryError::MissingSymbol(symbol.to_string()))
            }
        }
    }

    /// The address of the symbol named at load, valid for as long as the library is open.
    pub fn symbol_address(&self) -> usize {
        self.symbol.as_ptr() as usize
    }
}

impl Drop for SystemLibrary {
    fn drop(&mut self) {
        // SAFETY: the handle came from dlopen and is closed exactly once; whoever holds pointers
        // into the library is bound by our lifetime.
        unsafe { libc::dlclose(self.handle.as_ptr()) };
    }
}

/// Makes libm's symbols visible to libraries opened later; the handle is kept for the life of the
/// process. If libm cannot be opened, `dlopen` of an executable that needs it names the missing
/// symbol, which is the clearer error.
fn provide_libm() {
    static LIBM: Once = Once::new();
    LIBM.call_once(|| {
        // SAFETY: loading the system's libm, whose initializers are part of the C runtime.
        unsafe { libc::dlopen(c"libm.so.6".as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    });
}

fn last_dl_error() -> String {
    // SAFETY: dlerror returns null or a C string valid until the next dl* call on this thread.
    let message = unsafe { libc::dlerror() };
    if message.is_null() {
        "unknown error".to_string()
    } else {
        // SAFETY: non-null, so a NUL-terminated string owned by libdl, copied out at once.
        unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned()
    }
}

/// The library's bytes in a file `dlopen` can open, removed (or closed) on drop.
struct Staged {
    path: CString,
    file: File,
    temporary: Option<PathBuf>,
}

impl Staged {
    fn new(bytes: &[u8]) -> io::Result<Self> {
        match Self::in_memfd(bytes) {
            Ok(staged) => Ok(staged),
            Err(_) => Self::in_temporary_file(bytes),
        }
    }

    fn in_memfd(bytes: &[u8]) -> io::Result<Self> {
        // SAFETY: the name is a valid C string; the flags are valid for memfd_create.
        let fd = unsafe { libc::memfd_create(c"rtx-executable".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor that nothing else owns.
        let file = unsafe { File::from_raw_fd(fd) };
        let path = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd())).expect("no NUL in a path of digits");
        let mut staged = Staged { path, file, temporary: None };
        staged.file.write_all(bytes)?;
        Ok(staged)
    }

    fn in_temporary_file(bytes: &[u8]) -> io::Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!("rtx-executable-{}-{}.so", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let path = std::env::temp_dir().join(name);
        let staged_path = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let file = File::options().write(true).create_new(true).open(&path)?;
        let mut staged = Staged { path: staged_path, file, temporary: Some(path) };
        staged.file.write_all(bytes)?;
        Ok(staged)
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some(path) = &self.temporary {
            let _ = std::fs::remove_file(path);
        }
    }
}
