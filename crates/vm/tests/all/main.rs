//! The integration tests of rtx-vm, in one binary (vm_jit_calls.rs beside it is a binary of its
//! own: it sets `RTX_VM_JIT`, which every module load in its process reads).

mod vm_abi;
mod vm_decode;
mod vm_dump;
mod vm_fixtures;
mod vm_hostile;
mod vm_load;
mod vm_verify;
