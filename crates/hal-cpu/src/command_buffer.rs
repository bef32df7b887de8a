//! Command buffers on the CPU: commands are recorded as they come and replayed on the queue's
//! thread, with buffers resolved to host memory at execution: in order, or on `local-task` a group
//! at a time (the commands between two barriers), a run of groups as one job of phases on the
//! worker pool.

use std::sync::Arc;

use bumpalo::Bump;
use smallvec::SmallVec;

use super::executable::{self, place, BoundBytes, Dispatch, LocalExecutable, ReadyWork};
use super::workers::Workers;
use rtx_hal::backend::Transfer;
use rtx_hal::buffer::Buffer;
use rtx_hal::command_buffer::{
    table_entry, BufferRange, BufferSource, Command, CommandList, ExecutableCheck, Recorded, SpareLists, TableEntry,
    Workgroups,
};
use rtx_hal::executable::Executable;
use rtx_host::{Diagnostic, StatusCode};
use rtx_vm::buffer::{check_fill, ByteBuffer};

/// A command buffer of the CPU devices (they dispatch only their own executables), its storage
/// one of `spares` if there is one.
pub fn new(binding_capacity: u32, spares: &Arc<SpareLists>) -> CommandList {
    let accepts: ExecutableCheck = Box::new(|executable| local_executable(executable).map(drop));
    CommandList::new(binding_capacity, accepts, spares)
}

/// Runs the recorded commands with `table` resolving slot references and `memory` giving each
/// buffer's bytes. With a `pool`, the commands between two barriers (which the program lets run at
/// once) run together, fills and copies cut into pieces, and a run of such groups is one job (see
/// [`run_chain`]); without one, barriers order nothing: commands run one after the other, in
/// recording order.
pub fn execute(
    list: &CommandList,
    table: &[TableEntry],
    memory: MemoryAccess,
    pool: Option<&Workers>,
) -> Result<(), Diagnostic> {
    list.with_commands(|recorded| {
        let Some(workers) = pool else {
            return recorded.commands().iter().try_for_each(|command| run_one(command, recorded, table, memory));
        };
        let mut rest = recorded.commands();
        while !rest.is_empty() {
            rest = workers.with_arena(|arena| run_chain(rest, recorded, table, memory, workers, arena))?;
        }
        Ok(())
    })
}

/// Runs one command on this thread (a dispatch's workgroups on the executable's pool, if any).
fn run_one(
    command: &Command,
    recorded: &Recorded,
    table: &[TableEntry],
    memory: MemoryAccess,
) -> Result<(), Diagnostic> {
    match command {
        Command::Dispatch { .. } => {
            with_dispatch(command, recorded, table, memory, |code, dispatch| code.dispatch(dispatch))
        }
        Command::Transfer(transfer) => run_transfer(transfer, table, memory),
        Command::Barrier => Ok(()),
    }
}

/// How many groups one job runs at most: each has a lane per thread of the pool in the job.
const CHAIN_GROUPS: usize = 32;

/// Runs the groups at the front of `commands` (up to [`CHAIN_GROUPS`]) as one job of phases on
/// `workers`, laid out in `arena`, and returns the commands after them. The threads then go from
/// one group to the next as the last workgroup of a group finishes, where a job per group had
/// every thread wait for the submitter to hand out the next. What must run before the rest of its
/// group is laid out (an update from host memory, a dispatch whose code runs its workgroups only
/// itself, an indirect dispatch's grid, which the groups before may write) runs then, on its own,
/// so its group starts the next chain unless it is the first.
fn run_chain<'c>(
    commands: &'c [Command],
    recorded: &Recorded,
    table: &[TableEntry],
    memory: MemoryAccess,
    workers: &Workers,
    arena: &Bump,
) -> Result<&'c [Command], Diagnostic> {
    let mut parts = bumpalo::collections::Vec::new_in(arena);
    let mut ends = bumpalo::collections::Vec::with_capacity_in(CHAIN_GROUPS, arena);
    let mut rest = commands;
    let mut failed = None;
    while !rest.is_empty() && ends.len() < CHAIN_GROUPS {
        let end = rest.iter().position(|command| matches!(command, Command::Barrier)).unwrap_or(rest.len());
        let (group, after) = rest.split_at(end);
        let laid = parts.len();
        match lay_out(group, ends.is_empty(), recorded, table, memory, workers, arena, &mut parts) {
            Ok(true) => ends.push(parts.len()),
            Ok(false) => {
                parts.truncate(laid);
                break;
            }
            // The groups before still run, as they would have before it, and their failure comes
            // first.
            Err(error) => {
                failed = Some(error);
                break;
            }
        }
        // Past the barrier.
        rest = after.get(1..).unwrap_or_default();
    }
    executable::run_phases(&parts[..ends.last().copied().unwrap_or(0)], &ends, workers, arena)?;
    failed.map_or(Ok(rest), Err)
}

/// Lays the commands of one group out in `arena` as `parts`; `false`, before running anything,
/// where something must run now (see [`run_chain`]) and `first` says the group is not the first
/// of its chain.
#[allow(clippy::too_many_arguments)]
fn lay_out<'a>(
    group: &'a [Command],
    first: bool,
    recorded: &'a Recorded,
    table: &'a [TableEntry],
    memory: MemoryAccess,
    workers: &Workers,
    arena: &'a Bump,
    parts: &mut bumpalo::collections::Vec<'a, &'a dyn ReadyWork>,
) -> Result<bool, Diagnostic> {
    let runs_now = |command: &Command| match command {
        Command::Dispatch { workgroups, .. } => matches!(workgroups, Workgroups::Indirect(_)),
        Command::Transfer(transfer) => matches!(transfer, Transfer::Update { .. }),
        Command::Barrier => false,
    };
    if !first && group.iter().any(runs_now) {
        return Ok(false);
    }
    for command in group {
        let made = match command {
            Command::Dispatch { .. } => with_dispatch(command, recorded, table, memory, |code, dispatch| {
                match code.ready(dispatch, workers, arena)? {
                    Some(made) => Ok(Some(Some(made))),
                    None if first => code.dispatch(dispatch).map(|()| Some(None)),
                    None => Ok(None),
                }
            })?,
            Command::Transfer(transfer) => Some(in_pieces(transfer, table, memory, arena)?),
            Command::Barrier => Some(None),
        };
        match made {
            Some(made) => parts.extend(made),
            None => return Ok(false),
        }
    }
    Ok(true)
}

/// Resolves a dispatch command (its grid, export and bindings) and hands it to `run` with the
/// code that runs it.
fn with_dispatch<'a, R>(
    command: &'a Command,
    recorded: &'a Recorded,
    table: &'a [TableEntry],
    memory: MemoryAccess,
    run: impl FnOnce(&'a LocalExecutable, &Dispatch<'_>) -> Result<R, Diagnostic>,
) -> Result<R, Diagnostic> {
    let Command::Dispatch { executable, export, workgroups, constants, bindings } = command else {
        unreachable!("with_dispatch is given dispatch commands only")
    };
    let workgroup_count = match workgroups {
        Workgroups::Fixed(count) => *count,
        Workgroups::Indirect(range) => {
            let mut bytes = [0; 12];
            resolve(range, table, memory)?
                .read(&mut bytes)
                .map_err(|e| e.map_message(|message| format!("indirect workgroup count: {message}")))?;
            let mut count = [0; 3];
            for (count, bytes) in count.iter_mut().zip(bytes.chunks_exact(4)) {
                *count = u32::from_le_bytes(bytes.try_into().expect("chunks of 4 bytes"));
            }
            count
        }
    };
    let export = executable.check_export(*export)?;
    let code = local_executable(executable)?;
    let constants = recorded.constants(*constants);
    with_bound(recorded.bindings(*bindings), table, memory, |bound| {
        run(code, &Dispatch { export, workgroup_count, constants, bindings: bound })
    })
}

/// Bindings of up to this many buffers (all a compiled dispatch has, as a rule) are resolved on
/// the stack.
const BINDINGS_ON_STACK: usize = 8;

/// Runs `run` with `bindings` resolved: on the stack when there are few, so a dispatch allocates
/// nothing.
fn with_bound<'a, R>(
    bindings: &'a [BufferRange],
    table: &'a [TableEntry],
    memory: MemoryAccess,
    run: impl FnOnce(&[BoundBytes<'a>]) -> Result<R, Diagnostic>,
) -> Result<R, Diagnostic> {
    let mut bound = SmallVec::<[BoundBytes<'a>; BINDINGS_ON_STACK]>::with_capacity(bindings.len());
    for range in bindings {
        bound.push(resolve(range, table, memory)?);
    }
    run(&bound)
}

/// The CPU code of an executable, or INVALID_ARGUMENT for another backend's.
fn local_executable(executable: &Executable) -> Result<&LocalExecutable, Diagnostic> {
    executable.backend().as_any().downcast_ref::<LocalExecutable>().ok_or_else(|| {
        Diagnostic::new(StatusCode::InvalidArgument, "executable was loaded by another device than a CPU device")
    })
}

/// Runs a fill, copy or update at once (queue order is the caller's).
pub fn run_transfer(transfer: &Transfer, table: &[TableEntry], memory: MemoryAccess) -> Result<(), Diagnostic> {
    if let Transfer::Update { source, source_offset, target } = transfer {
        let target = resolve(target, table, memory)?;
        // The source is a host buffer the program may still be touching: byte moves.
        return ByteBuffer::copy(source, *source_offset as i64, target.buffer(), target.offset(), target.len() as i64);
    }
    resolve_transfer(transfer, table, memory)?.map_or(Ok(()), |bytes| bytes.run(0, bytes.len()))
}

/// ByteBuffer of a fill or copy one workgroup covers when it runs beside other work: some microseconds
/// of stores, so that a tensor zeroed between dispatches keeps every core busy for a moment
/// instead of one for its whole length.
const PIECE: usize = 64 * 1024;

/// A fill or copy ready to run in pieces; an update (from host memory the program may still be
/// touching, at most 64 KiB) runs now and gives nothing.
fn in_pieces<'a>(
    transfer: &'a Transfer,
    table: &'a [TableEntry],
    memory: MemoryAccess,
    arena: &'a Bump,
) -> Result<Option<&'a dyn ReadyWork>, Diagnostic> {
    let Some(bytes) = resolve_transfer(transfer, table, memory)? else {
        return run_transfer(transfer, table, memory).map(|()| None);
    };
    // A copy whose ranges overlap stays one piece: a move in pieces could read what an earlier
    // piece wrote.
    let whole = match &bytes {
        TransferBytes::Fill { .. } => false,
        TransferBytes::Copy { source, target } => {
            let (from, to, length) = (source.address() as usize, target.address() as usize, target.len());
            from < to + length && to < from + length
        }
    };
    let pieces = if whole { 1 } else { bytes.len().div_ceil(PIECE).max(1) as u64 };
    Ok(Some(place(arena, || TransferPieces { bytes, pieces })))
}

/// A fill or copy with its ranges resolved and checked.
enum TransferBytes<'a> {
    Fill { target: BoundBytes<'a>, pattern: u64, pattern_length: usize },
    Copy { source: BoundBytes<'a>, target: BoundBytes<'a> },
}

/// A fill's or copy's ranges, checked (a fill's pattern against its length, a copy's lengths);
/// `None` for an update.
fn resolve_transfer<'a>(
    transfer: &'a Transfer,
    table: &'a [TableEntry],
    memory: MemoryAccess,
) -> Result<Option<TransferBytes<'a>>, Diagnostic> {
    Ok(Some(match transfer {
        Transfer::Fill { target, pattern, pattern_length } => {
            let target = resolve(target, table, memory)?;
            check_fill(target.len(), *pattern_length)?;
            TransferBytes::Fill { target, pattern: *pattern, pattern_length: *pattern_length }
        }
        Transfer::Copy { source, target } => {
            let (source, target) = (resolve(source, table, memory)?, resolve(target, table, memory)?);
            if source.len() != target.len() {
                return Err(Diagnostic::new(
                    StatusCode::InvalidArgument,
                    format!("copy of {} bytes into a range of {}", source.len(), target.len()),
                ));
            }
            TransferBytes::Copy { source, target }
        }
        Transfer::Update { .. } => return Ok(None),
    }))
}

impl TransferBytes<'_> {
    fn len(&self) -> usize {
        match self {
            TransferBytes::Fill { target, .. } | TransferBytes::Copy { target, .. } => target.len(),
        }
    }

    /// Fills or copies `length` bytes from `at` within the ranges.
    fn run(&self, at: usize, length: usize) -> Result<(), Diagnostic> {
        let (at, length) = (at as i64, length as i64);
        match self {
            // SAFETY: queue work runs in submission order, and within a group (no barrier
            // between) the program touches no byte another command writes; pieces of one
            // transfer are disjoint. Compiled dispatches write these bytes through raw pointers
            // on the same terms.
            TransferBytes::Fill { target, pattern, pattern_length } => unsafe {
                target.buffer().fill_ordered(target.offset() + at, length, *pattern, *pattern_length)
            },
            // SAFETY: as above; a copy whose ranges overlap runs as one piece.
            TransferBytes::Copy { source, target } => unsafe {
                ByteBuffer::copy_ordered(
                    source.buffer(),
                    source.offset() + at,
                    target.buffer(),
                    target.offset() + at,
                    length,
                )
            },
        }
    }
}

/// A fill or copy as `pieces` workgroups of [`PIECE`] bytes (the last takes the rest).
struct TransferPieces<'a> {
    bytes: TransferBytes<'a>,
    pieces: u64,
}

impl ReadyWork for TransferPieces<'_> {
    fn workgroups(&self) -> u64 {
        self.pieces
    }

    fn local_memory(&self) -> usize {
        0
    }

    fn run(&self, index: u64, _processor: u32, _memory: &mut [u8]) -> Result<(), Diagnostic> {
        let start = index as usize * PIECE;
        let end = if index + 1 == self.pieces { self.bytes.len() } else { start + PIECE };
        self.bytes.run(start, end - start)
    }
}

/// How commands reach a buffer's bytes: as the processor running them addresses its memory. The
/// CPU devices' is [`host_bytes`]; a device whose memory the host cannot map but whose work runs
/// on the CPU (a test device, an emulator) brings its own.
pub type MemoryAccess = for<'b> fn(&'b Buffer) -> Result<BoundBytes<'b>, Diagnostic>;

/// A buffer's bytes in host memory: all of the CPU devices' buffers have them.
pub fn host_bytes(buffer: &Buffer) -> Result<BoundBytes<'_>, Diagnostic> {
    let memory = buffer.memory().mapping().ok_or_else(|| {
        Diagnostic::new(StatusCode::InvalidArgument, "buffer memory is not host memory, which the CPU devices run on")
    })?;
    BoundBytes::whole(memory).range(buffer.offset() as i64, buffer.len() as i64).map_err(|e| e.at("buffer memory"))
}

/// The bytes a range names, with the table applied.
fn resolve<'a>(
    range: &'a BufferRange,
    table: &'a [TableEntry],
    memory: MemoryAccess,
) -> Result<BoundBytes<'a>, Diagnostic> {
    match &range.source {
        BufferSource::Direct(buffer) => memory(buffer)?.range(range.offset, range.length).map_err(|e| e.at("buffer")),
        BufferSource::Slot(slot) => {
            let (entry, buffer) = table_entry(table, *slot)?;
            memory(buffer)?
                .range(entry.offset, entry.length)
                .map_err(|e| e.at(format_args!("binding table slot {slot} entry")))?
                .range(range.offset, range.length)
                .map_err(|e| e.at(format_args!("binding table slot {slot}")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executable::ExecutableCode;
    use rtx_hal::backend::CommandBufferBackend;
    use rtx_hal::heap::HeapAllocator;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    /// What a fake workgroup does, given its export and index.
    type Behaviour = dyn Fn(usize, u64) -> Result<(), Diagnostic> + Send + Sync;

    /// Executable code whose workgroups run `behaviour`; with `ready` false it runs every
    /// dispatch itself, as VMVX does.
    struct Fake {
        names: Vec<String>,
        ready: bool,
        behaviour: Box<Behaviour>,
    }

    impl std::fmt::Debug for Fake {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("Fake")
        }
    }

    struct FakeDispatch<'a> {
        fake: &'a Fake,
        export: usize,
        count: u64,
    }

    impl ReadyWork for FakeDispatch<'_> {
        fn workgroups(&self) -> u64 {
            self.count
        }

        fn local_memory(&self) -> usize {
            8 * (self.export + 1)
        }

        fn run(&self, index: u64, _processor: u32, memory: &mut [u8]) -> Result<(), Diagnostic> {
            assert!(memory.len() >= self.local_memory());
            (self.fake.behaviour)(self.export, index)
        }
    }

    impl ExecutableCode for Fake {
        fn export_names(&self) -> &[String] {
            &self.names
        }

        fn dispatch(&self, dispatch: &Dispatch<'_>) -> Result<(), Diagnostic> {
            (0..workgroups(dispatch)).try_for_each(|index| (self.behaviour)(dispatch.export, index))
        }

        fn ready<'a>(
            &'a self,
            dispatch: &Dispatch<'_>,
            _concurrency: usize,
            arena: &'a Bump,
        ) -> Result<Option<&'a dyn ReadyWork>, Diagnostic> {
            let count = workgroups(dispatch);
            Ok(self.ready.then(|| place(arena, || FakeDispatch { fake: self, export: dispatch.export, count }) as &_))
        }
    }

    fn workgroups(dispatch: &Dispatch<'_>) -> u64 {
        dispatch.workgroup_count.iter().map(|&count| u64::from(count)).product()
    }

    /// One command buffer of `steps`: `Some((export, workgroups))` a dispatch, `None` a barrier.
    fn record(fake: Fake, steps: &[Option<(usize, u32)>]) -> CommandList {
        let executable = executable(fake);
        let list = new(0, &Arc::default());
        for step in steps {
            match *step {
                Some((export, count)) => list.dispatch(&executable, export, Workgroups::Fixed([count, 1, 1]), &[], &[]),
                None => list.barrier(),
            }
            .unwrap();
        }
        list.finalize().unwrap();
        list
    }

    fn executable(fake: Fake) -> Executable {
        Executable::new(Arc::new(LocalExecutable::new(Box::new(fake))))
    }

    fn fake(ready: bool, behaviour: impl Fn(usize, u64) -> Result<(), Diagnostic> + Send + Sync + 'static) -> Fake {
        Fake { names: vec!["a".into(), "b".into(), "c".into()], ready, behaviour: Box::new(behaviour) }
    }

    /// Waits up to a few seconds for `arrived` to reach `count`: an error if it does not (one
    /// thread running both sides of a rendezvous), rather than a hang.
    fn meet(arrived: &AtomicUsize, count: usize, what: &str) -> Result<(), Diagnostic> {
        arrived.fetch_add(1, Ordering::SeqCst);
        let deadline = Instant::now() + Duration::from_secs(5);
        while arrived.load(Ordering::SeqCst) < count {
            if Instant::now() > deadline {
                return Err(Diagnostic::new(StatusCode::DeadlineExceeded, format!("{what} ran alone")));
            }
            std::thread::yield_now();
        }
        Ok(())
    }

    /// Dispatches with no barrier between them run at once on the pool: each one's only
    /// workgroup waits for the other's to start, which one-after-the-other cannot satisfy.
    #[test]
    fn dispatches_without_a_barrier_between_them_run_together() {
        let workers = Workers::new(2).unwrap();
        for _ in 0..50 {
            let arrived = Arc::new(AtomicUsize::new(0));
            let seen = arrived.clone();
            let list =
                record(fake(true, move |export, _| meet(&seen, 2, ["a", "b"][export])), &[Some((0, 1)), Some((1, 1))]);
            execute(&list, &[], host_bytes, Some(&workers)).unwrap();
            assert_eq!(arrived.load(Ordering::SeqCst), 2);
        }
    }

    /// A barrier still ends a group: every workgroup before it has finished before any after it
    /// starts, with or without a pool.
    #[test]
    fn barriers_order_the_dispatches_around_them() {
        let workers = Workers::new(3).unwrap();
        for pool in [None, Some(&workers)] {
            let finished = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0)]);
            let seen = finished.clone();
            let list = record(
                fake(true, move |export, index| {
                    if export == 2 && seen[0].load(Ordering::SeqCst) + seen[1].load(Ordering::SeqCst) != 13 {
                        return Err(Diagnostic::new(StatusCode::Internal, format!("c[{index}] started early")));
                    }
                    std::thread::sleep(Duration::from_micros(200));
                    seen[export].fetch_add(1, Ordering::SeqCst);
                    Ok(())
                }),
                &[Some((0, 6)), Some((1, 7)), None, Some((2, 9))],
            );
            execute(&list, &[], host_bytes, pool).unwrap();
            assert_eq!(finished.each_ref().map(|count| count.load(Ordering::SeqCst)), [6, 7, 9]);
        }
    }

    /// Every workgroup of every dispatch in a group runs once, with its own dispatch's index, a
    /// dispatch of no workgroups among them; code that runs its dispatches only itself runs them
    /// too; and the first failure is what the command buffer returns.
    #[test]
    fn a_group_runs_each_workgroup_once_and_returns_failures() {
        let workers = Workers::new(3).unwrap();
        for ready in [true, false] {
            let runs = Arc::new(Mutex::new(Vec::new()));
            let seen = runs.clone();
            let list = record(
                fake(ready, move |export, index| {
                    seen.lock().unwrap().push((export, index));
                    Ok(())
                }),
                &[Some((0, 3)), Some((1, 0)), Some((2, 5)), Some((0, 2))],
            );
            execute(&list, &[], host_bytes, Some(&workers)).unwrap();
            let mut runs = runs.lock().unwrap().clone();
            runs.sort_unstable();
            assert_eq!(runs, [(0, 0), (0, 0), (0, 1), (0, 1), (0, 2), (2, 0), (2, 1), (2, 2), (2, 3), (2, 4)]);
        }
        let list = record(
            fake(true, |export, index| match (export, index) {
                (1, 3) => Err(Diagnostic::new(StatusCode::OutOfRange, "b[3] read past its binding")),
                _ => Ok(()),
            }),
            &[Some((0, 4)), Some((1, 4)), None, Some((2, 4))],
        );
        let error = execute(&list, &[], host_bytes, Some(&workers)).unwrap_err();
        assert_eq!((error.code, error.message.as_str()), (StatusCode::OutOfRange, "b[3] read past its binding"));
    }

    /// A command buffer of more groups than one job holds runs them in order, across jobs and
    /// around what must run before the rest of its group: dispatches of code that runs them
    /// itself, updates from host memory, and indirect grids that an earlier group writes.
    #[test]
    fn groups_run_in_order_across_jobs_and_around_what_runs_first() {
        let workers = Workers::new(3).unwrap();
        let groups = 3 * CHAIN_GROUPS + 5;
        // Group 41's 4 workgroups come from its indirect grid.
        let sizes: Vec<u64> = (0..groups).map(|group| [1, 5, 2, 0, 9, 3, 4][group % 7]).collect();
        let before: Vec<u64> = sizes.iter().scan(0, |sum, size| Some(std::mem::replace(sum, *sum + size))).collect();
        // Group `g` updates byte `g` of `updated` when `g % 11 == 4`; group 40 writes the grid of
        // group 41's indirect dispatch, of 4 workgroups.
        let updates: Vec<usize> = (0..groups).filter(|group| group % 11 == 4).collect();
        let updated = host_buffer(&vec![0; groups]);
        let grid = host_buffer(&[0; 12]);
        let finished = Arc::new(AtomicUsize::new(0));
        let behaviour = {
            let (finished, updated, updates, sizes) =
                (finished.clone(), updated.clone(), updates.clone(), sizes.clone());
            move |group: usize, index: u64| {
                let done = finished.load(Ordering::SeqCst) as u64;
                let bytes = contents(&updated);
                let applied: Vec<bool> = updates.iter().map(|&update| bytes[update] == update as u8).collect();
                let expected: Vec<bool> = updates.iter().map(|&update| update <= group).collect();
                if done < before[group] || done >= before[group] + sizes[group] || applied != expected {
                    let message = format!("{group}[{index}] ran with {done} finished and updates {applied:?}");
                    return Err(Diagnostic::new(StatusCode::Internal, message));
                }
                finished.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        };
        let names: Vec<String> = (0..groups).map(|group| group.to_string()).collect();
        let shared: Arc<Behaviour> = Arc::new(behaviour);
        let code = |ready| {
            let shared = shared.clone();
            executable(Fake { names: names.clone(), ready, behaviour: Box::new(move |g, i| shared(g, i)) })
        };
        let (spreading, itself) = (code(true), code(false));
        let list = new(0, &Arc::default());
        for (group, &size) in sizes.iter().enumerate() {
            if group > 0 {
                list.barrier().unwrap();
            }
            if updates.contains(&group) {
                let source = ByteBuffer::from_bytes(&[group as u8]).unwrap();
                list.transfer(Transfer::Update { source, source_offset: 0, target: range(&updated, group as i64, 1) })
                    .unwrap();
            }
            if group == 40 {
                let source = ByteBuffer::from_bytes(&[4, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0]).unwrap();
                list.transfer(Transfer::Update { source, source_offset: 0, target: range(&grid, 0, 12) }).unwrap();
            }
            let code = if group % 5 == 3 { &itself } else { &spreading };
            let workgroups = if group == 41 {
                Workgroups::Indirect(range(&grid, 0, 12))
            } else {
                Workgroups::Fixed([size as u32, 1, 1])
            };
            list.dispatch(code, group, workgroups, &[], &[]).unwrap();
        }
        list.finalize().unwrap();
        execute(&list, &[], host_bytes, Some(&workers)).unwrap();
        assert_eq!(sizes[41], 4);
        assert_eq!(finished.load(Ordering::SeqCst) as u64, sizes.iter().sum::<u64>());
    }

    fn host_buffer(bytes: &[u8]) -> Buffer {
        HeapAllocator::wrap(ByteBuffer::from_bytes(bytes).unwrap(), 0, 0)
    }

    fn contents(buffer: &Buffer) -> Vec<u8> {
        host_bytes(buffer).unwrap().span().unwrap().to_vec()
    }

    fn range(buffer: &Buffer, offset: i64, length: i64) -> BufferRange {
        BufferRange { source: BufferSource::Direct(buffer.clone()), offset, length }
    }

    /// `hal.executable.lookup.function` compares names as bytes: an exact match only, and a name
    /// that is not UTF-8 is an error that shows it.
    #[test]
    fn exports_are_looked_up_by_their_bytes() {
        let executable = executable(fake(false, |_, _| Ok(())));
        assert_eq!([b"a", b"b", b"c"].map(|name| executable.lookup(name).unwrap()), [0, 1, 2]);
        for (name, shown) in [(&b"ab"[..], "`ab`"), (b"", "``"), (b"\xffa", "`\u{fffd}a`")] {
            let error = executable.lookup(name).unwrap_err();
            assert_eq!(error.code, StatusCode::NotFound);
            assert!(error.message.ends_with(&format!("no export named {shown}")), "{}", error.message);
        }
    }

    /// A list's dispatches keep their own constants and bindings in the list's storage, and a
    /// released list gives that storage back emptied: it holds none of the buffers it named, and
    /// the next list starts with no commands.
    #[test]
    fn a_released_list_keeps_no_commands_for_the_next() {
        let spares = Arc::default();
        let bytes = ByteBuffer::from_bytes(&[0; 64]).unwrap();
        let buffer = HeapAllocator::wrap(bytes.clone(), 0, 0);
        let executable = executable(fake(false, |_, _| Ok(())));
        let list = new(0, &spares);
        list.dispatch(&executable, 0, Workgroups::Fixed([1, 1, 1]), &[7, 8], &[range(&buffer, 0, 32)]).unwrap();
        list.transfer(Transfer::Fill { target: range(&buffer, 32, 32), pattern: 0, pattern_length: 1 }).unwrap();
        list.dispatch(
            &executable,
            1,
            Workgroups::Fixed([1, 1, 1]),
            &[9],
            &[range(&buffer, 8, 8), range(&buffer, 0, 8)],
        )
        .unwrap();
        list.finalize().unwrap();
        list.with_commands(|recorded| {
            let parts: Vec<_> = recorded
                .commands()
                .iter()
                .filter_map(|command| match command {
                    Command::Dispatch { constants, bindings, .. } => Some((
                        recorded.constants(*constants).to_vec(),
                        recorded
                            .bindings(*bindings)
                            .iter()
                            .map(|range| (range.offset, range.length))
                            .collect::<Vec<_>>(),
                    )),
                    _ => None,
                })
                .collect();
            assert_eq!(parts, [(vec![7, 8], vec![(0, 32)]), (vec![9], vec![(8, 8), (0, 8)])]);
            Ok(())
        })
        .unwrap();
        drop(buffer);
        assert_eq!(Arc::strong_count(&bytes), 5, "the list names the buffer four times");
        drop(list);
        assert_eq!(Arc::strong_count(&bytes), 1, "the released list holds none");
        let next = new(0, &spares);
        next.finalize().unwrap();
        assert!(next.with_commands(|recorded| Ok(recorded.commands().is_empty())).unwrap());
    }

    /// Fills and copies in a group with a dispatch, as pieces beside it: many pieces (the
    /// pattern keeping its phase from one piece to the next), a copy between buffers, a move
    /// within one buffer (its ranges overlap, so it stays whole), an update; the same bytes as
    /// one after the other with no pool.
    #[test]
    fn fills_and_copies_in_a_group_give_the_bytes_of_running_them_in_order() {
        let workers = Workers::new(3).unwrap();
        let size = 5 * PIECE + 1236;
        let source: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
        let mut expected = Vec::new();
        for pool in [None, Some(&workers)] {
            let (filled, from, to, moved) = (
                host_buffer(&vec![0; size + 8]),
                host_buffer(&source),
                host_buffer(&vec![0; size]),
                host_buffer(&source),
            );
            let ran = Arc::new(AtomicUsize::new(0));
            let seen = ran.clone();
            let list = new(0, &Arc::default());
            let dispatch = executable(fake(true, move |_, _| {
                seen.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }));
            list.dispatch(&dispatch, 0, Workgroups::Fixed([3, 1, 1]), &[], &[]).unwrap();
            for transfer in [
                Transfer::Fill { target: range(&filled, 2, size as i64), pattern: 0x0403_0201, pattern_length: 4 },
                Transfer::Copy { source: range(&from, 0, size as i64), target: range(&to, 0, size as i64) },
                Transfer::Copy { source: range(&moved, 0, (size - 100) as i64), target: range(&moved, 100, -1) },
                Transfer::Update {
                    source: ByteBuffer::from_bytes(&[9, 9, 9]).unwrap(),
                    source_offset: 1,
                    target: range(&filled, 0, 2),
                },
            ] {
                list.transfer(transfer).unwrap();
            }
            list.finalize().unwrap();
            execute(&list, &[], host_bytes, pool).unwrap();
            assert_eq!(ran.load(Ordering::SeqCst), 3);
            let result = [contents(&filled), contents(&to), contents(&moved)];
            let filled = &result[0];
            assert_eq!(&filled[..2], [9, 9]);
            assert!(filled[2..2 + size].chunks(4).all(|c| c == &[1, 2, 3, 4][..c.len()]), "the fill's pattern");
            assert_eq!(&filled[2 + size..], [0; 6]);
            assert_eq!(result[1], source);
            assert_eq!((&result[2][..100], &result[2][100..]), (&source[..100], &source[..size - 100]));
            expected.push(result);
        }
        assert_eq!(expected[0], expected[1]);
    }

    /// A transfer that cannot run fails in a group as it does alone.
    #[test]
    fn a_bad_transfer_in_a_group_fails_as_it_does_alone() {
        let workers = Workers::new(2).unwrap();
        let buffer = host_buffer(&[0; 64]);
        let bad = [
            (
                Transfer::Fill { target: range(&buffer, 0, 6), pattern: 1, pattern_length: 4 },
                "fill length 6 is not a multiple of the 4-byte pattern",
            ),
            (
                Transfer::Fill { target: range(&buffer, 0, 8), pattern: 1, pattern_length: 3 },
                "fill pattern of 3 bytes (1, 2, 4 or 8 are allowed)",
            ),
            (
                Transfer::Copy { source: range(&buffer, 0, 8), target: range(&buffer, 16, 4) },
                "copy of 8 bytes into a range of 4",
            ),
        ];
        for (transfer, message) in bad {
            let list = new(0, &Arc::default());
            list.transfer(transfer).unwrap();
            list.finalize().unwrap();
            for pool in [None, Some(&workers)] {
                let error = execute(&list, &[], host_bytes, pool).unwrap_err();
                assert_eq!((error.code, error.message.as_str()), (StatusCode::InvalidArgument, message));
            }
        }
    }

    /// An indirect dispatch runs the grid its buffer holds where the range starts (a table slot
    /// here), read when it runs; a range too short for three counts is an error naming it.
    #[test]
    fn an_indirect_grid_is_read_from_its_range() {
        let workers = Workers::new(2).unwrap();
        let counts = host_buffer(&[7, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0]);
        let table = [TableEntry { buffer: Some(counts.clone()), offset: 4, length: -1 }];
        let ran = Arc::new(AtomicUsize::new(0));
        let seen = ran.clone();
        let dispatch = executable(fake(true, move |_, _| {
            seen.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }));
        let list = new(1, &Arc::default());
        let grid = |length| Workgroups::Indirect(BufferRange { source: BufferSource::Slot(0), offset: 0, length });
        list.dispatch(&dispatch, 0, grid(12), &[], &[]).unwrap();
        list.finalize().unwrap();
        for pool in [None, Some(&workers)] {
            ran.store(0, Ordering::SeqCst);
            execute(&list, &table, host_bytes, pool).unwrap();
            assert_eq!(ran.load(Ordering::SeqCst), 6, "a grid of 3 x 2 x 1");
        }
        let short = new(1, &Arc::default());
        short.dispatch(&dispatch, 0, grid(8), &[], &[]).unwrap();
        short.finalize().unwrap();
        let error = execute(&short, &table, host_bytes, Some(&workers)).unwrap_err();
        assert_eq!(
            (error.code, error.message.as_str()),
            (StatusCode::OutOfRange, "indirect workgroup count: reading 12 bytes: range 0+12 out of range of 8 bytes")
        );
    }

    /// Few bindings are resolved on the stack, many on the heap, none to nothing: each the range
    /// `resolve` gives, and an unresolvable one an error.
    #[test]
    fn bindings_resolve_alike_however_many_there_are() {
        let data = host_buffer(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
        let table = [TableEntry { buffer: Some(data.clone()), offset: 0, length: -1 }];
        let range = |i: usize| BufferRange { source: BufferSource::Slot(0), offset: i as i64, length: 1 };
        for count in [0, 1, 3, BINDINGS_ON_STACK, BINDINGS_ON_STACK + 1, 12] {
            let bindings: Vec<BufferRange> = (0..count).map(range).collect();
            let mut seen = Vec::new();
            with_bound(&bindings, &table, host_bytes, |bound| {
                seen = bound.iter().map(|b| b.span().unwrap().to_vec()).collect();
                Ok(())
            })
            .unwrap();
            assert_eq!(seen, (0..count as u8).map(|i| vec![i]).collect::<Vec<_>>(), "{count} bindings");
        }
        for count in [3, BINDINGS_ON_STACK + 2] {
            let mut bindings: Vec<BufferRange> = (0..count).map(range).collect();
            bindings[count - 1] = BufferRange { source: BufferSource::Slot(1), offset: 0, length: 1 };
            let error = with_bound(&bindings, &table, host_bytes, |_| -> Result<(), Diagnostic> { panic!("not run") })
                .unwrap_err();
            assert_eq!(error.message, "binding table slot 1 out of range (the table has 1 entries)");
        }
    }

    /// Ranges resolve without copying: direct and through the table, offsets adding up, `-1` the
    /// rest, and every way out of bounds refused with the sizes involved.
    #[test]
    fn ranges_resolve_within_their_buffers_and_tables() {
        let data = host_buffer(&[0, 1, 2, 3, 4, 5, 6, 7]);
        let direct = BufferRange { source: BufferSource::Direct(data.clone()), offset: 2, length: -1 };
        let bound = resolve(&direct, &[], host_bytes).unwrap();
        assert_eq!((bound.offset(), bound.len()), (2, 6));
        assert_eq!(bound.span().unwrap().to_vec(), [2, 3, 4, 5, 6, 7]);
        let table = [
            TableEntry { buffer: Some(data.clone()), offset: 4, length: 4 },
            TableEntry { buffer: None, offset: 0, length: 0 },
        ];
        let slot = BufferRange { source: BufferSource::Slot(0), offset: 1, length: 2 };
        let bound = resolve(&slot, &table, host_bytes).unwrap();
        assert_eq!(bound.span().unwrap().to_vec(), [5, 6]);
        assert_eq!(bound.address(), resolve(&direct, &[], host_bytes).unwrap().address().wrapping_add(3));
        let message = |range: BufferRange| resolve(&range, &table, host_bytes).err().unwrap().message;
        assert_eq!(
            message(BufferRange { source: BufferSource::Slot(0), offset: 3, length: 2 }),
            "binding table slot 0: range 3+2 out of range of 4 bytes"
        );
        let bad_entry = [TableEntry { buffer: Some(data.clone()), offset: 4, length: 8 }];
        assert_eq!(
            resolve(&BufferRange { source: BufferSource::Slot(0), offset: 0, length: -1 }, &bad_entry, host_bytes)
                .err()
                .unwrap()
                .message,
            "binding table slot 0 entry: range 4+8 out of range of 8 bytes"
        );
        assert_eq!(
            message(BufferRange { source: BufferSource::Slot(2), offset: 0, length: 1 }),
            "binding table slot 2 out of range (the table has 2 entries)"
        );
        assert_eq!(
            message(BufferRange { source: BufferSource::Slot(1), offset: 0, length: 1 }),
            "binding table slot 1 is null"
        );
        assert_eq!(
            message(BufferRange { source: BufferSource::Direct(data.clone()), offset: -1, length: 1 }),
            "buffer: range -1+1 out of range of 8 bytes"
        );
        let span = data.subspan(2, 4).unwrap();
        let rest = BufferRange { source: BufferSource::Direct(span.clone()), offset: 1, length: -1 };
        assert_eq!(
            resolve(&rest, &[], host_bytes).unwrap().span().unwrap().to_vec(),
            [3, 4, 5],
            "a subspan's range starts at its offset"
        );
        assert_eq!(
            message(BufferRange { source: BufferSource::Direct(span), offset: 2, length: 3 }),
            "buffer: range 2+3 out of range of 4 bytes",
            "a subspan's range ends where it does, not where its memory does"
        );
    }
}
