//! The Vulkan loader's and driver's libraries stay loaded once they have run.
//!
//! The loader unloads a driver when the last instance is destroyed, and a driver unloads the
//! libraries it opened itself (its shader compiler, say) when its device is destroyed. NVIDIA's
//! driver leaves thread-exit destructors in those libraries for each thread that called into it,
//! so a host thread that used a device and exits after the device is gone jumps into code that
//! is no longer mapped. Before a device or the instance is destroyed, every library loaded since
//! the instance opened the loader is marked `RTLD_NODELETE`: the Vulkan objects are destroyed as
//! before, only the code stays mapped (its own destructors run at process exit, as any library's
//! do). The host's libraries, loaded before, are left as they are. The instance holds the record,
//! so nothing of it outlives the instance.

use std::collections::HashSet;
use std::ffi::{c_int, c_void, CStr, CString};

/// The libraries loaded so far that need nothing more: loaded before the Vulkan loader, or
/// already kept.
#[derive(Debug)]
pub struct Libraries {
    settled: HashSet<CString>,
}

impl Libraries {
    /// Every library loaded now counts as the host's.
    pub fn now() -> Libraries {
        Libraries { settled: loaded().into_iter().collect() }
    }

    /// Marks every library loaded since as never to be unloaded; returns how many it marked.
    pub fn keep_new(&mut self) -> usize {
        let mut kept = 0;
        for name in loaded() {
            if self.settled.contains(&name) {
                continue;
            }
            // SAFETY: `RTLD_NOLOAD` only looks up a library that is loaded (it runs no
            // initialiser) and adds `RTLD_NODELETE` to it; the reference it takes is given back
            // at once, which leaves the library loaded for good.
            unsafe {
                let handle = libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD | libc::RTLD_NODELETE);
                if !handle.is_null() {
                    libc::dlclose(handle);
                    kept += 1;
                }
            }
            self.settled.insert(name);
        }
        kept
    }
}

/// The names of the loaded libraries (the program itself and the vDSO have none).
fn loaded() -> Vec<CString> {
    extern "C" fn visit(info: *mut libc::dl_phdr_info, _size: usize, names: *mut c_void) -> c_int {
        // SAFETY: `dl_iterate_phdr` passes a valid record and the pointer `loaded` gave it, a
        // `Vec` that nothing else touches during the walk.
        let (name, names) = unsafe { ((*info).dlpi_name, &mut *names.cast::<Vec<CString>>()) };
        if !name.is_null() {
            // SAFETY: a library's name is a NUL-terminated string while it is loaded.
            let name = unsafe { CStr::from_ptr(name) };
            if !name.is_empty() {
                names.push(name.to_owned());
            }
        }
        0
    }
    let mut names: Vec<CString> = Vec::new();
    // SAFETY: `visit` only reads the records and pushes to `names`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&raw mut names).cast::<c_void>()) };
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_loaded(name: &CStr) -> bool {
        // SAFETY: `RTLD_NOLOAD` only looks the library up; a reference taken is given back.
        unsafe {
            let handle = libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD);
            if !handle.is_null() {
                libc::dlclose(handle);
            }
            !handle.is_null()
        }
    }

    #[test]
    fn a_library_loaded_after_the_record_stays_loaded_once_kept() {
        // zlib: on every Debian system (dpkg needs it), and not linked into the test program.
        let library = c"libz.so.1";
        assert!(!is_loaded(library), "the test needs a library the test program has not loaded");
        // SAFETY: zlib's initialisers are the system's; the handle is closed below.
        let open = || unsafe { libc::dlopen(library.as_ptr(), libc::RTLD_NOW) };

        // Not kept: closing the only handle unloads it.
        let mut libraries = Libraries::now();
        let handle = open();
        assert!(!handle.is_null(), "libz.so.1 is not installed");
        // SAFETY: `handle` came from `dlopen`.
        unsafe { libc::dlclose(handle) };
        assert!(!is_loaded(library), "closed without being kept, it is unloaded");

        // Kept: closing the handle leaves it loaded. The libraries loaded before are not touched.
        let handle = open();
        assert_eq!(libraries.keep_new(), 1, "only the library loaded since the record");
        // SAFETY: as above.
        unsafe { libc::dlclose(handle) };
        assert!(is_loaded(library), "kept, it stays loaded after its last handle is closed");
        assert_eq!(libraries.keep_new(), 0, "a kept library is not marked twice");
    }
}
