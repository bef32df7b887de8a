//! `tfrt_tutorial.*`: the kernels of TFRT's tutorial — a user type made and printed by kernels.

use crate::KernelRegistry;
use rtx_host::Chain;

/// A point, the tutorial's user-defined type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coordinate {
    pub x: i32,
    pub y: i32,
}

pub(crate) fn register(registry: &mut KernelRegistry) {
    registry.add_kernel("tfrt_tutorial.create_coordinate", |f| {
        let coordinate = Coordinate { x: *f.get::<i32>(0)?, y: *f.get::<i32>(1)? };
        f.emplace_result(0, coordinate)
    });
    registry.add_kernel("tfrt_tutorial.print_coordinate", |f| {
        let Coordinate { x, y } = *f.get::<Coordinate>(0)?;
        f.context().print(&format!("({x}, {y})\n"));
        f.emplace_result(0, Chain)
    });
}
