//! Stream ids: TFRT's stream analysis (`compiler::StreamAnalysis`), which groups a block's ops
//! into streams the executor runs inline, one after another.
//!
//! Each op has a cost: `tfrt.return` and `tfrt.merge.chains` cost 1, `tfrt_test.test_cost` its
//! `_tfrt_cost`, anything else the cost threshold (`tfrt.cost_threshold` of the function, else of
//! the module; 1 when unset). A forward pass gives each op a parent: the operand producer with
//! the costliest path from the root (block arguments count as the root). A backward pass builds
//! streams from the leaves up: an op joins the child stream holding the return (else the
//! costliest one), after cheap child streams were merged until they pass the threshold. Without a
//! positive threshold, the costliest path becomes the threshold and merging compares whole paths.
//! With `tfrt.merge_inter_dependent_streams`, child streams with data dependencies between them
//! merge first. Stream ids are the order streams were created in; the root's is the function's.

use std::collections::HashMap;

use super::program::{Program, RETURN};
use rtx_mlir::ir::{Attribute, BlockId, OpId, Type, ValueDef};

const MERGE_CHAINS: &str = "tfrt.merge.chains";
const FUNC_RETURN: &str = "func.return";
/// Ops whose cost is their `_tfrt_cost` attribute (TFRT's `CostFunctionInterface`).
const ATTRIBUTE_COST_OPS: &[&str] = &["tfrt_test.test_cost"];

/// The root node: what ops without operands, and users of block arguments, hang from.
const ROOT: usize = 0;

#[derive(Default)]
struct Node {
    stream: usize,
    cost: i64,
    cost_from_root: i64,
    scheduled_users: Vec<usize>,
    /// Non-chain users that are not scheduled users (insertion order).
    side_uses: Vec<usize>,
}

#[derive(Default, Clone)]
struct Stream {
    cost: i64,
    merged_into: Option<usize>,
    /// Streams with data dependencies on this one (insertion-ordered set).
    side_deps: Vec<usize>,
    contains_return: bool,
}

/// The stream of the root and of each op of a block, by the op's position.
pub(super) struct Streams {
    pub(super) root: usize,
    pub(super) ops: Vec<usize>,
}

/// Where an op's cost is wrong.
pub(super) struct BadCost(pub(super) OpId);

struct Analysis<'p, 'm> {
    program: &'p Program<'m>,
    ops: &'p [OpId],
    /// Each op's node.
    node_of: HashMap<OpId, usize>,
    nodes: Vec<Node>,
    streams: Vec<Stream>,
    threshold: i64,
    merge_by_path: bool,
    merge_inter_dependent: bool,
}

/// Runs the analysis over `block`.
pub(super) fn analyze(program: &Program<'_>, block: BlockId) -> Result<Streams, BadCost> {
    let m = program.module;
    let ops = &m.block(block).ops;
    let owner = m.region(m.block(block).parent.expect("function bodies are in regions")).parent;
    let option = |name: &str| {
        owner
            .filter(|&op| program.is(op, super::program::FUNC))
            .and_then(|func| program.attribute(func, name))
            .or_else(|| owner.and_then(|op| program.enclosing_module(op)).and_then(|md| program.attribute(md, name)))
            .map(|attr| m.context.attr(attr))
    };
    let threshold = match option("tfrt.cost_threshold") {
        Some(Attribute::Integer { value, .. }) => signed(value),
        _ => -1,
    };
    let merge_inter_dependent = matches!(
        option("tfrt.merge_inter_dependent_streams"),
        Some(Attribute::Integer { ty, value }) if matches!(m.context.ty(*ty), Type::Integer { width: 1, .. }) && value.words()[0] != 0
    );
    let mut analysis = Analysis {
        program,
        ops,
        node_of: ops.iter().enumerate().map(|(i, &op)| (op, i + 1)).collect(),
        nodes: (0..=ops.len()).map(|_| Node::default()).collect(),
        streams: Vec::new(),
        threshold,
        merge_by_path: false,
        merge_inter_dependent,
    };
    analysis.schedule()?;
    for node in (1..=ops.len()).rev() {
        analysis.build_stream(node);
    }
    analysis.build_stream(ROOT);
    let root = analysis.nodes[ROOT].stream;
    let ops = (1..=ops.len()).map(|node| analysis.latest(analysis.nodes[node].stream)).collect();
    Ok(Streams { root, ops })
}

/// An integer attribute's value, sign-extended (MLIR's `getInt`).
fn signed(value: &rtx_mlir::ir::ApInt) -> i64 {
    let word = value.words()[0] as i64;
    match value.width {
        0 => 0,
        w if w >= 64 => word,
        w => (word << (64 - w)) >> (64 - w),
    }
}

impl Analysis<'_, '_> {
    fn op(&self, node: usize) -> OpId {
        self.ops[node - 1]
    }

    fn threshold(&self) -> i64 {
        if self.threshold <= 0 {
            1
        } else {
            self.threshold
        }
    }

    fn cost(&self, node: usize) -> Result<i64, BadCost> {
        if node == ROOT {
            return Ok(1);
        }
        let op = self.op(node);
        let p = self.program;
        if p.is(op, RETURN) || p.is(op, FUNC_RETURN) || p.is(op, MERGE_CHAINS) {
            return Ok(1);
        }
        if ATTRIBUTE_COST_OPS.iter().any(|name| p.is(op, name)) {
            return match p.attribute(op, "_tfrt_cost").map(|a| p.module.context.attr(a)) {
                Some(Attribute::Integer { value, .. }) if signed(value) > 0 => Ok(signed(value)),
                _ => Err(BadCost(op)),
            };
        }
        Ok(self.threshold())
    }

    /// The forward pass: costs, costs from the root, and each op's scheduling parent.
    fn schedule(&mut self) -> Result<(), BadCost> {
        let m = self.program.module;
        let mut max_cost = 1;
        self.nodes[ROOT].cost = 1;
        self.nodes[ROOT].cost_from_root = 1;
        for node in 1..self.nodes.len() {
            let op = self.op(node);
            let cost = self.cost(node)?;
            self.nodes[node].cost = cost;
            let mut cost_from_root = cost;
            let operands = m.operands(op);
            if operands.is_empty() {
                self.nodes[ROOT].scheduled_users.push(node);
            } else {
                let mut parent = ROOT;
                let mut parent_cost = 0;
                for &operand in operands {
                    let def = match m.value(operand).def {
                        ValueDef::OpResult { op: def, .. } => self.node_of.get(&def).copied().unwrap_or(ROOT),
                        _ => ROOT,
                    };
                    let is_chain = matches!(m.context.ty(m.value(operand).ty),
                        Type::Text { text, .. } if m.context.str_bytes(*text) == b"!tfrt.chain");
                    if !is_chain && !self.nodes[def].side_uses.contains(&node) {
                        self.nodes[def].side_uses.push(node);
                    }
                    if self.nodes[def].cost_from_root > parent_cost {
                        parent = def;
                        parent_cost = self.nodes[def].cost_from_root;
                    }
                }
                self.nodes[parent].side_uses.retain(|&user| user != node);
                self.nodes[parent].scheduled_users.push(node);
                cost_from_root += parent_cost;
            }
            self.nodes[node].cost_from_root = cost_from_root;
            max_cost = max_cost.max(cost_from_root);
        }
        if self.threshold <= 0 {
            self.merge_by_path = true;
            self.threshold = max_cost;
        }
        Ok(())
    }

    fn latest(&self, mut stream: usize) -> usize {
        while let Some(next) = self.streams[stream].merged_into {
            stream = next;
        }
        stream
    }

    fn merge(&mut self, from: usize, to: usize) {
        for dep in self.streams[from].side_deps.clone() {
            let dep = self.latest(dep);
            if dep != to && !self.streams[to].side_deps.contains(&dep) {
                self.streams[to].side_deps.push(dep);
            }
        }
        self.streams[to].side_deps.retain(|&dep| dep != from);
        self.streams[to].contains_return |= self.streams[from].contains_return;
        self.streams[to].cost += self.streams[from].cost;
        self.streams[from].merged_into = Some(to);
    }

    fn assign(&mut self, node: usize, stream: usize) {
        self.nodes[node].stream = stream;
        self.streams[stream].cost += self.nodes[node].cost;
        if node != ROOT {
            let op = self.op(node);
            self.streams[stream].contains_return |= self.program.is(op, RETURN) || self.program.is(op, FUNC_RETURN);
        }
        for user in self.nodes[node].side_uses.clone() {
            let other = self.latest(self.nodes[user].stream);
            self.nodes[user].stream = other;
            if other != stream {
                for (a, b) in [(stream, other), (other, stream)] {
                    if !self.streams[a].side_deps.contains(&b) {
                        self.streams[a].side_deps.push(b);
                    }
                }
            }
        }
    }

    /// Whether streams `a` and `b` together (`None` counting 0) pass the threshold for `node`.
    fn above(&self, node: usize, a: Option<usize>, b: Option<usize>) -> bool {
        let cost = |s: Option<usize>| s.map_or(0, |s| self.streams[s].cost);
        if self.merge_by_path {
            self.nodes[node].cost_from_root + cost(a) + cost(b) >= self.threshold()
        } else {
            cost(a) >= self.threshold()
        }
    }

    fn build_stream(&mut self, node: usize) {
        if self.nodes[node].scheduled_users.is_empty() {
            self.streams.push(Stream::default());
            self.assign(node, self.streams.len() - 1);
            return;
        }
        let mut children: Vec<usize> =
            self.nodes[node].scheduled_users.iter().map(|&user| self.nodes[user].stream).collect();
        if self.merge_inter_dependent && children.len() > 1 {
            let from_root = if self.merge_by_path { self.nodes[node].cost_from_root } else { 0 };
            self.merge_inter_dependent(from_root, &mut children);
        }
        let (mut best, mut best_cost, mut with_return) = (None, 0, None);
        let mut merged: Vec<usize> = Vec::new();
        for child in children {
            let candidate = if self.above(node, Some(child), None) {
                child
            } else {
                match merged.last() {
                    Some(&last) if !self.above(node, Some(last), Some(child)) => self.merge(child, last),
                    _ => merged.push(child),
                }
                *merged.last().expect("pushed or merged into")
            };
            if best_cost < self.streams[candidate].cost {
                best_cost = self.streams[candidate].cost;
                best = Some(candidate);
            }
            if self.streams[candidate].contains_return {
                with_return = Some(candidate);
            }
        }
        let stream = with_return.or(best).expect("stream costs are positive");
        self.assign(node, stream);
        if !self.merge_by_path {
            if let Some(&last) = merged.last() {
                if !self.above(node, Some(last), None) && stream != last {
                    self.merge(last, stream);
                }
            }
        }
    }

    fn merge_inter_dependent(&mut self, from_root: i64, children: &mut Vec<usize>) {
        let mut stale: Vec<usize> = Vec::new();
        for &child in children.iter() {
            if stale.contains(&child) {
                continue;
            }
            let mut candidates = Vec::new();
            for &dep in &self.streams[child].side_deps {
                if children.contains(&dep) {
                    let dep = self.latest(dep);
                    if self.streams[dep].cost < self.threshold() && dep != child && !candidates.contains(&dep) {
                        candidates.push(dep);
                    }
                }
            }
            for dep in dense_set_order(&candidates) {
                self.merge(dep, child);
                stale.push(dep);
                if from_root + self.streams[child].cost >= self.threshold() {
                    break;
                }
            }
        }
        children.retain(|child| !stale.contains(child));
    }
}

/// The order LLVM's `SmallDenseSet<int, 2>` iterates `values` (inserted in this order): by bucket,
/// buckets found by hashing (`value * 37`) with quadratic probing, the table growing to 64 buckets
/// on the second insert and doubling when three quarters full.
fn dense_set_order(values: &[usize]) -> Vec<usize> {
    let insert = |buckets: &mut Vec<Option<usize>>, value: usize| {
        let mask = buckets.len() - 1;
        let mut bucket = (value as u32).wrapping_mul(37) as usize & mask;
        let mut probe = 1;
        while buckets[bucket].is_some() {
            bucket = (bucket + probe) & mask;
            probe += 1;
        }
        buckets[bucket] = Some(value);
    };
    let mut buckets: Vec<Option<usize>> = vec![None; 2];
    for (count, &value) in values.iter().enumerate() {
        if (count + 1) * 4 >= buckets.len() * 3 {
            let grown = vec![None; (buckets.len() * 2).next_power_of_two().max(64)];
            let old = std::mem::replace(&mut buckets, grown);
            for kept in old.into_iter().flatten() {
                insert(&mut buckets, kept);
            }
        }
        insert(&mut buckets, value);
    }
    buckets.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    //! The stream ids TFRT's analysis gives these graphs (its own test, `tfrt_opt
    //! -tfrt-print-stream`, documents the same graphs' streams).
    use super::*;

    /// The streams of the root and of each op of the body of the only function in `text`.
    fn streams(text: &str) -> (usize, Vec<usize>) {
        let module = rtx_mlir::parse_text(text).expect("parses");
        let program = Program::new(&module).expect("one module");
        let func = module.walk().into_iter().find(|&op| program.is(op, super::super::program::FUNC)).expect("func");
        let block = module.region(module.op_regions(func)[0]).blocks[0];
        let Ok(streams) = analyze(&program, block) else { panic!("costs are valid") };
        (streams.root, streams.ops)
    }

    fn cost(id: u32, operands: &str, types: &str, cost: u32) -> String {
        format!(
            "%c{id} = \"tfrt_test.test_cost\"({operands}) {{_tfrt_cost = {cost} : i64, id = {id} : i64}} : ({types}) -> i32\n"
        )
    }

    fn module(function_attributes: &str, args: &str, body: &str, module_attributes: &str) -> String {
        format!(
            "\"builtin.module\"() ({{\n\"func.func\"() <{{function_type = ({args}) -> i32, sym_name = \"f\"}}> ({{\n\
             ^bb0(%a: i32):\n{body}}}) {function_attributes} : () -> ()\n}}) {module_attributes} : () -> ()"
        )
    }

    #[test]
    fn expensive_independent_ops_get_streams_of_their_own() {
        let text = "\"builtin.module\"() ({\n\
            \"func.func\"() <{function_type = () -> (i32, i32, i32), sym_name = \"f\"}> ({\n\
            %0 = \"tfrt.constant.i32\"() {value = 0 : i32} : () -> i32\n\
            %1 = \"tfrt.constant.i32\"() {value = 1 : i32} : () -> i32\n\
            %2 = \"tfrt.constant.i32\"() {value = 2 : i32} : () -> i32\n\
            \"tfrt.return\"(%0, %1, %2) : (i32, i32, i32) -> ()\n\
            }) : () -> ()\n}) {tfrt.cost_threshold = 10 : i64} : () -> ()";
        assert_eq!(streams(text), (0, vec![0, 2, 1, 0]));
    }

    #[test]
    fn the_function_threshold_wins_and_dependent_ops_share_a_stream() {
        let body = "%a0 = \"tfrt.constant.i32\"() {value = 1 : i32} : () -> i32\n\
            %a1 = \"tfrt.add.i32\"(%a, %a0) : (i32, i32) -> i32\n\
            %a2 = \"tfrt.add.i32\"(%a, %a1) : (i32, i32) -> i32\n\
            %b0 = \"tfrt.constant.i32\"() {value = 2 : i32} : () -> i32\n\
            %b1 = \"tfrt.add.i32\"(%a, %b0) : (i32, i32) -> i32\n\
            %b2 = \"tfrt.add.i32\"(%a, %b1) : (i32, i32) -> i32\n\
            %r = \"tfrt.add.i32\"(%a2, %b2) : (i32, i32) -> i32\n\
            \"tfrt.return\"(%r) : (i32) -> ()\n";
        let text = module("{tfrt.cost_threshold = 5 : i64}", "i32", body, "{tfrt.cost_threshold = 10 : i64}");
        assert_eq!(streams(&text), (0, vec![0, 0, 0, 1, 1, 1, 0, 0]));
    }

    #[test]
    fn cheap_streams_merge_until_they_pass_the_threshold() {
        let mut body = String::new();
        for (id, c) in [(1, 4), (2, 4), (3, 11), (4, 4), (5, 4)] {
            body += &cost(id, "%a", "i32", c);
        }
        body += &cost(6, "%c1, %c2, %c3, %c4, %c5", "i32, i32, i32, i32, i32", 1);
        body += "\"tfrt.return\"(%c6) : (i32) -> ()\n";
        let text = module("", "i32", &body, "{tfrt.cost_threshold = 10 : i64}");
        assert_eq!(streams(&text), (0, vec![4, 4, 0, 4, 0, 0, 0]));
    }

    #[test]
    fn without_a_threshold_the_costliest_path_is_the_threshold() {
        let mut body = cost(1, "%a", "i32", 4);
        for id in 2..=5 {
            body += &cost(id, &format!("%c{}", id - 1), "i32", 4);
        }
        for id in 10..=13 {
            body += &cost(id, "%a", "i32", 4);
        }
        body += &cost(6, "%c10, %c12, %c13, %c5", "i32, i32, i32, i32", 100);
        body += "\"tfrt.return\"(%c6) : (i32) -> ()\n";
        let text = module("{tfrt.cost_threshold = 0 : i64}", "i32", &body, "");
        assert_eq!(streams(&text), (0, vec![0, 0, 0, 0, 0, 4, 4, 4, 4, 0, 0]));
    }

    #[test]
    fn inter_dependent_streams_merge_first_when_asked() {
        let mut body = String::new();
        body += &cost(1, "%a", "i32", 5);
        body += &cost(2, "%a", "i32", 5);
        body += &cost(3, "%c1, %c2", "i32, i32", 1);
        body += &cost(4, "%a", "i32", 5);
        body += &cost(5, "%a", "i32", 5);
        body += &cost(6, "%c4, %c5", "i32, i32", 1);
        body += &cost(7, "%c4, %c5", "i32, i32", 1);
        body += &cost(8, "%a", "i32", 5);
        body += "%h0 = \"tfrt.merge.chains\"(%c8) : (i32) -> !tfrt.chain\n";
        body += &cost(9, "%a", "i32", 5);
        body += "%h1 = \"tfrt.merge.chains\"(%c9) : (i32) -> !tfrt.chain\n";
        body += &cost(10, "%c6, %c7, %h0, %h1", "i32, i32, !tfrt.chain, !tfrt.chain", 1);
        body += &cost(11, "%c3, %c10", "i32, i32", 1);
        body += "\"tfrt.return\"(%c11) : (i32) -> ()\n";
        let text =
            module("{tfrt.merge_inter_dependent_streams = true}", "i32", &body, "{tfrt.cost_threshold = 10 : i64}");
        assert_eq!(streams(&text), (0, vec![5, 5, 5, 0, 0, 0, 0, 2, 2, 2, 2, 0, 0, 0]));
    }
}
