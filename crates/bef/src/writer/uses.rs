//! Who uses each value of a block, in MLIR's use-list order: the newest use first (the reverse
//! of the order the ops and their operands were created in), unless the module records another
//! order for the value (MLIR bytecode's use-list orders), which is then applied.

use std::collections::HashMap;

use rtx_mlir::ir::{BlockId, Module, OpId, ValueId};

pub(super) struct Uses {
    users: HashMap<ValueId, Vec<OpId>>,
}

impl Uses {
    /// The uses of values by the ops of `block` (the only ops that may use them in BEF).
    pub(super) fn of_block(module: &Module, block: BlockId) -> Uses {
        let mut users: HashMap<ValueId, Vec<OpId>> = HashMap::new();
        for &op in &module.block(block).ops {
            for &operand in module.operands(op) {
                users.entry(operand).or_default().push(op);
            }
        }
        for list in users.values_mut() {
            list.reverse();
        }
        for order in &module.use_list_orders {
            if let Some(list) = users.get_mut(&order.value) {
                if let Some(reordered) = reorder(list, order.is_pairs, &order.indices) {
                    *list = reordered;
                }
            }
        }
        Uses { users }
    }

    /// The ops using `value`, an op once per operand it uses the value as.
    pub(super) fn users(&self, value: ValueId) -> &[OpId] {
        self.users.get(&value).map_or(&[], Vec::as_slice)
    }
}

/// Applies a recorded order to `list` (in the default order): use `r` moves to position
/// `indices[r]`; the pair form lists `(r, position)` for the uses that move. `None` when the
/// record does not fit the list.
fn reorder(list: &[OpId], is_pairs: bool, indices: &[u32]) -> Option<Vec<OpId>> {
    let positions: Vec<usize> = if is_pairs {
        let mut positions: Vec<usize> = (0..list.len()).collect();
        for pair in indices.chunks(2) {
            let [from, to] = *pair else { return None };
            *positions.get_mut(from as usize)? = to as usize;
        }
        positions
    } else {
        indices.iter().map(|&i| i as usize).collect()
    };
    if positions.len() != list.len() {
        return None;
    }
    let mut reordered = vec![None; list.len()];
    for (&user, &position) in list.iter().zip(&positions) {
        let slot = reordered.get_mut(position)?;
        if slot.is_some() {
            return None;
        }
        *slot = Some(user);
    }
    reordered.into_iter().collect()
}
