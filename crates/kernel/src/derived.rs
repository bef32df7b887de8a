//! Data a kernel derives from its program's constants — weights in the layout the kernel wants
//! (a recurrent layer's `Rᵀ`) — made by the first call that needs it and kept with the program for
//! every later call: the work a runtime does once when it loads a model, instead of on every call.
//!
//! A tensor is one of the program's constants when its bytes lie in the program's attributes
//! section (what `nn.constant` wraps, read-only): those bytes never change while the program
//! lives, so what is derived from them stays true. Data derived from any other tensor is made
//! again on each call.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::dtype::DType;
use crate::error::KernelError;
use crate::tensor::DenseHostTensor;

/// What identifies derived data: the constants it comes from — each one's byte range (offset
/// into the attributes section and length), element type and dimensions, since one range may be
/// read under several shapes (a reshaped constant shares its bytes) —, what the kernel made of
/// them, and the type it made.
type Key = (Box<[Source]>, &'static str, TypeId);

#[derive(Hash, PartialEq, Eq)]
struct Source {
    range: (usize, usize),
    dtype: DType,
    dims: Box<[i64]>,
}

/// A program's derived data (see the module documentation).
#[derive(Default)]
pub struct DerivedCache {
    entries: Mutex<HashMap<Key, Arc<dyn Any + Send + Sync>>>,
}

impl std::fmt::Debug for DerivedCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.entries.lock().map_or(0, |entries| entries.len());
        write!(f, "DerivedCache({count} entries)")
    }
}

impl DerivedCache {
    /// `make()`, the data named `what` derived from `sources`: kept and shared when every source
    /// is a constant in `section`, made afresh otherwise. Two first calls racing both make it;
    /// the first one stored is the one kept, so no call waits for another's work.
    pub fn get_or_make<T: Any + Send + Sync>(
        &self,
        section: &[u8],
        sources: &[&DenseHostTensor],
        what: &'static str,
        make: impl FnOnce() -> Result<T, KernelError>,
    ) -> Result<Arc<T>, KernelError> {
        let constants = sources.iter().map(|&tensor| {
            constant_range(section, tensor).map(|range| Source {
                range,
                dtype: tensor.dtype(),
                dims: tensor.shape().dims().into(),
            })
        });
        let Some(constants) = constants.collect::<Option<Box<[Source]>>>() else {
            return make().map(Arc::new);
        };
        let key = (constants, what, TypeId::of::<T>());
        if let Some(kept) = self.lookup(&key) {
            return Ok(kept);
        }
        let made = Arc::new(make()?);
        let mut entries = self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let kept = entries.entry(key).or_insert_with(|| made as Arc<dyn Any + Send + Sync>);
        Ok(Arc::clone(kept).downcast::<T>().expect("entries are keyed by their type"))
    }

    fn lookup<T: Any + Send + Sync>(&self, key: &Key) -> Option<Arc<T>> {
        let entries = self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        entries.get(key).map(|kept| Arc::clone(kept).downcast::<T>().expect("entries are keyed by their type"))
    }
}

/// Where `tensor`'s bytes lie in `section` (offset and length), when they lie there and the
/// buffer is read-only: then they are the program's constant.
fn constant_range(section: &[u8], tensor: &DenseHostTensor) -> Option<(usize, usize)> {
    let buffer = tensor.buffer();
    let (start, end) = (section.as_ptr() as usize, section.as_ptr() as usize + section.len());
    let at = buffer.as_ptr() as usize;
    (buffer.is_read_only() && at >= start && at.checked_add(buffer.len())? <= end).then(|| (at - start, buffer.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::TensorShape;
    use rtx_host::{HostBuffer, HostContext};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A read-only tensor over `len` bytes at `offset` of `section`.
    fn over(host: &HostContext, section: &Arc<Vec<u8>>, offset: usize, len: usize) -> DenseHostTensor {
        let owner: Arc<dyn Send + Sync> = Arc::clone(section) as Arc<dyn Send + Sync>;
        // SAFETY: the bytes lie in `section`, which the buffer keeps alive and nothing changes.
        let buffer = unsafe { HostBuffer::borrowed(host.allocator().clone(), &section[offset..offset + len], owner) }
            .expect("a borrowed buffer");
        DenseHostTensor::from_buffer(DType::F32, TensorShape::new(vec![len as i64 / 4]).unwrap(), buffer).unwrap()
    }

    #[test]
    fn constants_are_derived_once_and_other_tensors_every_time() {
        let host = HostContext::with_work_queue_spec("s").unwrap();
        let section = Arc::new(vec![0u8; 64]);
        let cache = DerivedCache::default();
        let made = AtomicUsize::new(0);
        let make = || {
            made.fetch_add(1, Ordering::Relaxed);
            Ok(made.load(Ordering::Relaxed))
        };
        let (a, b) = (over(&host, &section, 0, 16), over(&host, &section, 16, 16));
        let a_matrix =
            DenseHostTensor::from_buffer(DType::F32, TensorShape::new(vec![2, 2]).unwrap(), a.buffer().clone())
                .unwrap();
        assert_eq!(*cache.get_or_make(&section, &[&a], "sum", make).unwrap(), 1);
        assert_eq!(*cache.get_or_make(&section, &[&a], "sum", make).unwrap(), 1, "kept");
        assert_eq!(*cache.get_or_make(&section, &[&a, &b], "sum", make).unwrap(), 2, "other sources");
        assert_eq!(*cache.get_or_make(&section, &[&a], "product", make).unwrap(), 3, "another derivation");
        assert_eq!(*cache.get_or_make(&section, &[&a_matrix], "sum", make).unwrap(), 4, "the bytes in another shape");
        let elsewhere = Arc::new(vec![0u8; 64]);
        let outside = over(&host, &elsewhere, 0, 16);
        assert_eq!(*cache.get_or_make(&section, &[&outside], "sum", make).unwrap(), 5);
        assert_eq!(*cache.get_or_make(&section, &[&outside], "sum", make).unwrap(), 6, "not a constant: made again");
        let failing = || -> Result<usize, KernelError> { Err("no".into()) };
        assert!(cache.get_or_make(&section, &[&b], "sum", failing).is_err());
        assert_eq!(*cache.get_or_make(&section, &[&b], "sum", make).unwrap(), 7, "a failure is not kept");
    }
}
