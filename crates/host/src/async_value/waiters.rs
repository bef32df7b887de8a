//! Continuations waiting for a value: an intrusive, singly linked stack of heap nodes.
//!
//! Each node is one allocation holding the link, a type-erased entry point, and the closure
//! itself inline (no second `Box<dyn FnOnce>`). Nodes are pushed by `and_then` with a CAS on the
//! value's word and detached all at once by the setter's `swap`, so no lock is ever taken.

use std::mem::ManuallyDrop;
use std::panic::{self, AssertUnwindSafe};
use std::ptr;

/// The type-independent prefix of every node; `repr(C)` puts it at offset 0 of `Node<F>`.
#[repr(C)]
pub(crate) struct NodeHead {
    pub(crate) next: *mut NodeHead,
    /// Consumes the node: frees it and either runs or just drops the closure.
    finish: unsafe fn(*mut NodeHead, Finish),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Finish {
    Run,
    Drop,
}

#[repr(C)]
struct Node<F> {
    head: NodeHead,
    callback: ManuallyDrop<F>,
}

/// Allocates a node for `callback`. Its address is 8-aligned (it holds pointers), which leaves the
/// low three bits of the value's word for the state and lock.
pub(crate) fn new_node<F: FnOnce() + Send + 'static>(callback: F) -> *mut NodeHead {
    let node = Box::new(Node {
        head: NodeHead { next: ptr::null_mut(), finish: finish::<F> },
        callback: ManuallyDrop::new(callback),
    });
    Box::into_raw(node).cast()
}

/// # Safety
/// `node` must come from `new_node::<F>` and not have been finished.
unsafe fn finish<F: FnOnce()>(node: *mut NodeHead, how: Finish) {
    // SAFETY: the caller guarantees `node` is a live `Node<F>` we now own.
    let node = unsafe { Box::from_raw(node.cast::<Node<F>>()) };
    let callback = ManuallyDrop::into_inner(node.callback);
    if how == Finish::Run {
        callback();
    }
}

/// Runs one detached node.
///
/// # Safety
/// `node` must be a live node owned by the caller.
pub(crate) unsafe fn run_one(node: *mut NodeHead) {
    // SAFETY: forwarded from the caller.
    unsafe { ((*node).finish)(node, Finish::Run) }
}

/// Runs every node of a detached list in the order they were added (the stack reversed first;
/// TFRT runs the most recent first). A host that attaches a continuation and then awaits the
/// value is woken by a waiter added after its continuation, so the continuation has run by then.
///
/// A panicking continuation does not stop the others: every waiter runs exactly once, then the
/// first panic continues on the setter's thread.
///
/// # Safety
/// `list` must be a detached list (or null) owned by the caller.
pub(crate) unsafe fn run_all(list: *mut NodeHead) {
    let mut node = ptr::null_mut();
    let mut rest = list;
    while !rest.is_null() {
        // SAFETY: every node of the detached list is live and ours; relinking changes no owner.
        unsafe {
            let next = (*rest).next;
            (*rest).next = node;
            node = rest;
            rest = next;
        }
    }
    let mut first_panic = None;
    while !node.is_null() {
        // SAFETY: each node is live until finished; read the link before finishing it.
        let next = unsafe { (*node).next };
        let current = node;
        // SAFETY: we own the detached node.
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| unsafe { run_one(current) })) {
            first_panic.get_or_insert(payload);
        }
        node = next;
    }
    if let Some(payload) = first_panic {
        panic::resume_unwind(payload);
    }
}

/// Frees every node of a list without running it (the value died unset).
///
/// # Safety
/// As for [`run_all`].
pub(crate) unsafe fn drop_all(list: *mut NodeHead) {
    let mut node = list;
    while !node.is_null() {
        // SAFETY: as in run_all.
        unsafe {
            let next = (*node).next;
            ((*node).finish)(node, Finish::Drop);
            node = next;
        }
    }
}
