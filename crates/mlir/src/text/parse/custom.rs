//! Custom (pretty) op syntax: an op spelt by a bare name is looked up in [`syntax`] and its
//! form parsed into exactly the op its generic spelling gives (same operands, results, regions
//! and attributes; the types the custom form leaves implicit come from the table).

use super::{EntryArg, LocRef, OpHead, Operand, PBlock, PDef, PRegion, Parser, R};
use crate::ir::{AttrId, Attribute, Properties, Signedness, Type, TypeId};
use crate::text::syntax::{self, Form, Matched, CHAIN, OP_HANDLER, TENSOR_HANDLE};

/// What a custom form gives: operands with their types, result types, attributes by name and
/// regions.
#[derive(Default)]
struct Parts<'s> {
    operands: Vec<Operand<'s>>,
    results: Vec<TypeId>,
    attrs: Vec<(String, AttrId)>,
    regions: Vec<u32>,
}

/// An operand use not yet typed: `(name, number, position)`.
type Use<'s> = (&'s [u8], u32, usize);

impl<'s> Parser<'s> {
    /// The rest of an op spelt by a bare name (`tfrt.add.i32 %a, %b`, `func.func @f() {...}`).
    pub(super) fn custom_op(&mut self, block: u32, head: OpHead<'s>) -> R<()> {
        let word = self.bare_ident().map(|w| String::from_utf8_lossy(w).into_owned()).unwrap_or_default();
        let default = self.default_dialects.last().copied().unwrap_or("");
        let resolved = syntax::resolve_bare_name(&word, default).and_then(|full| Some((syntax::lookup(&full)?, full)));
        let Some((matched, full)) = resolved else {
            return self.err_at(
                head.name_pos,
                format!("unknown custom operation '{word}' (an op rtx has no custom syntax for is written generic: \"{word}\"(...) : ...)"),
            );
        };
        let name = self.op_name(full.as_bytes());
        let op = self.push_op(block, name);
        self.default_dialects.push(syntax::default_dialect(&full));
        let parts = self.custom_parts(&matched, &head);
        self.default_dialects.pop();
        let mut parts = parts?;
        self.ops[op as usize].regions = std::mem::take(&mut parts.regions);
        let attrs = self.attr_dict(std::mem::take(&mut parts.attrs));
        self.finish_op(op, &head, parts.operands, &parts.results, attrs, Properties::None)
    }

    /// The attribute dictionary of `attrs` (sorted by name, as upstream keeps dictionaries), or
    /// `None` when there are none.
    fn attr_dict(&mut self, mut attrs: Vec<(String, AttrId)>) -> Option<AttrId> {
        if attrs.is_empty() {
            return None;
        }
        attrs.sort_by(|a, b| a.0.cmp(&b.0));
        let entries: Vec<(AttrId, AttrId)> = attrs.into_iter().map(|(k, v)| (self.name_attr(&k), v)).collect();
        Some(self.intern_attr(Attribute::Dictionary(entries.into())))
    }

    fn name_attr(&mut self, name: &str) -> AttrId {
        let value = self.module.context.intern_str(name.as_bytes());
        self.intern_attr(Attribute::String { value, ty: None })
    }

    fn custom_parts(&mut self, m: &Matched, head: &OpHead<'s>) -> R<Parts<'s>> {
        let mut p = Parts::default();
        match m.syntax.form {
            Form::Operands { operands, results } => {
                // A form without operands (`tfrt.new.chain`) must not take the next op's results.
                let uses = if operands.is_empty() { Vec::new() } else { self.bare_operands()? };
                self.optional_attr_dict(&mut p.attrs)?;
                p.operands = self.fixed_operands(m, uses, operands, head.name_pos)?;
                p.results = self.fixed_types(m, results)?;
            }
            Form::OperandsAttr { operands, results, attr, literal } => {
                let uses = if operands.is_empty() { Vec::new() } else { self.bare_operands()? };
                let value = match literal {
                    Some(text) => {
                        let ty = self.fixed_type(&m.type_text(text))?;
                        self.typed_literal_attr(ty)?
                    }
                    None => self.attr()?,
                };
                p.attrs.push((attr.into(), value));
                self.optional_attr_dict(&mut p.attrs)?;
                p.operands = self.fixed_operands(m, uses, operands, head.name_pos)?;
                p.results = self.fixed_types(m, results)?;
            }
            Form::ComplexConstant => {
                let ty = self.fixed_type(&m.type_text("$t"))?;
                let Type::Complex(elem) = *self.module.context.ty(ty) else {
                    return self.err_at(head.name_pos, "a complex constant's dtype must be complex");
                };
                let real = self.typed_literal_attr(elem)?;
                self.expect(b',', "between the real and imaginary parts")?;
                let imaginary = self.typed_literal_attr(elem)?;
                p.attrs.push(("real".into(), real));
                p.attrs.push(("imaginary".into(), imaginary));
                self.optional_attr_dict(&mut p.attrs)?;
                p.results = vec![ty];
            }
            Form::TypedOperands { results } => {
                let uses = self.bare_operands()?;
                self.optional_attr_dict(&mut p.attrs)?;
                self.expect(b':', "before the operand types")?;
                let types = if uses.is_empty() { Vec::new() } else { self.type_list()? };
                p.operands = self.typed_operands(uses, &types, head.name_pos)?;
                p.results = self.fixed_types(m, results)?;
            }
            Form::Return => {
                let uses = self.bare_operands()?;
                let types = if uses.is_empty() { Vec::new() } else { self.colon_type_list()? };
                p.operands = self.typed_operands(uses, &types, head.name_pos)?;
            }
            Form::Call | Form::Once => {
                for &key in callee_names(m) {
                    p.attrs.push((key.into(), self.symbol()?));
                }
                let uses = self.paren_operands()?;
                self.optional_attr_dict(&mut p.attrs)?;
                let (inputs, results, pos) = self.colon_function_type()?;
                p.operands = self.typed_operands(uses, &inputs, pos)?;
                p.results = results;
            }
            Form::Cond | Form::Case | Form::While => {
                let first = self.value_use()?;
                let first_ty = match m.syntax.form {
                    Form::Case => self.int_type(32),
                    _ => self.int_type(1),
                };
                for &key in callee_names(m) {
                    let value = if matches!(m.syntax.form, Form::Case) { self.attr()? } else { self.symbol()? };
                    p.attrs.push((key.into(), value));
                }
                let uses = self.paren_operands()?;
                self.optional_attr_dict(&mut p.attrs)?;
                if matches!(m.syntax.form, Form::While) {
                    self.expect_keyword("parallel_iterations")?;
                    self.expect(b'(', "after 'parallel_iterations'")?;
                    let ty = self.int_type(64);
                    p.attrs.push(("parallel_iterations".into(), self.typed_literal_attr(ty)?));
                    self.expect(b')', "to end 'parallel_iterations'")?;
                }
                let (inputs, results, pos) = self.colon_function_type()?;
                let (name, number, upos) = first;
                p.operands.push(Operand { name, number, pos: upos, ty: first_ty });
                p.operands.extend(self.typed_operands(uses, &inputs, pos)?);
                p.results = results;
            }
            Form::ExecuteOp { chains } => self.execute_op(&mut p, chains, head.name_pos)?,
            Form::TensorCond | Form::TensorWhile => {
                let condition = match m.syntax.form {
                    Form::TensorCond => Some(self.value_use()?),
                    _ => None,
                };
                for &key in callee_names(m) {
                    p.attrs.push((key.into(), self.symbol()?));
                }
                let mut uses = self.paren_operands()?;
                self.optional_attr_dict(&mut p.attrs)?;
                let (inputs, results, pos) = self.colon_function_type()?;
                if uses.is_empty() {
                    return self.err_at(pos, "expected the chain operand before the function operands");
                }
                let (name, number, upos) = uses.remove(0);
                if let Some((name, number, cpos)) = condition {
                    let ty = self.fixed_type(TENSOR_HANDLE)?;
                    p.operands.push(Operand { name, number, pos: cpos, ty });
                }
                let chain = self.fixed_type(CHAIN)?;
                p.operands.push(Operand { name, number, pos: upos, ty: chain });
                p.operands.extend(self.typed_operands(uses, &inputs, pos)?);
                p.results = std::iter::once(chain).chain(results).collect();
            }
            Form::If => {
                let mut uses = self.bare_operands()?;
                if uses.is_empty() {
                    return self.err("expected the condition of 'tfrt.if'");
                }
                // Upstream prints the dictionary without the keyword it reads.
                if self.eat_keyword("attributes") || self.peek() == Some(b'{') {
                    self.required_attr_dict(&mut p.attrs)?;
                }
                let (inputs, results, pos) = self.colon_function_type()?;
                let (name, number, upos) = uses.remove(0);
                p.operands.push(Operand { name, number, pos: upos, ty: self.int_type(1) });
                let body = self.typed_operands(uses, &inputs, pos)?;
                p.regions.push(self.region_with(Some(entry_args(&body)))?);
                if self.eat_keyword("else") {
                    p.regions.push(self.region_with(Some(entry_args(&body)))?);
                } else if !results.is_empty() {
                    return self.err("expected 'else' in 'tfrt.if' with result values");
                } else {
                    p.regions.push(self.returning_region(&inputs, head.name_pos));
                }
                p.operands.extend(body);
                p.results = results;
            }
            Form::Repeat => {
                let mut uses = self.bare_operands()?;
                if uses.is_empty() {
                    return self.err("expected the trip count of 'tfrt.repeat.i32'");
                }
                if self.eat_keyword("attributes") || self.at_attr_dict() {
                    self.required_attr_dict(&mut p.attrs)?;
                }
                let types = if self.peek() == Some(b':') { self.colon_type_list()? } else { Vec::new() };
                let (name, number, upos) = uses.remove(0);
                p.operands.push(Operand { name, number, pos: upos, ty: self.int_type(32) });
                let body = self.typed_operands(uses, &types, head.name_pos)?;
                p.regions.push(self.region_with(Some(entry_args(&body)))?);
                p.operands.extend(body);
                p.results = types;
            }
            Form::ParallelFor | Form::ParallelCall => {
                let i32_ty = self.int_type(32);
                let start = self.value_use()?;
                self.expect_keyword("to")?;
                let end = self.value_use()?;
                self.expect_keyword("fixed")?;
                let block_size = self.value_use()?;
                let uses = if matches!(m.syntax.form, Form::ParallelFor) {
                    if self.eat(b',') {
                        self.bare_operands()?
                    } else {
                        Vec::new()
                    }
                } else {
                    for &key in callee_names(m) {
                        p.attrs.push((key.into(), self.symbol()?));
                    }
                    self.paren_operands()?
                };
                let types = if self.peek() == Some(b':') { self.colon_type_list()? } else { Vec::new() };
                let bound = |(name, number, pos): Use<'s>| Operand { name, number, pos, ty: i32_ty };
                let (start, end, block_size) = (bound(start), bound(end), bound(block_size));
                let extra = self.typed_operands(uses, &types, head.name_pos)?;
                if matches!(m.syntax.form, Form::ParallelFor) {
                    let mut args = entry_args(std::slice::from_ref(&start));
                    args.extend(entry_args(std::slice::from_ref(&end)));
                    args.extend(entry_args(&extra));
                    p.regions.push(self.region_with(Some(args))?);
                }
                p.operands = [start, end, block_size].into_iter().chain(extra).collect();
                p.results = vec![self.fixed_type(CHAIN)?];
            }
            Form::DoAsync => {
                let uses = self.bare_operands()?;
                if self.eat_keyword("attributes") {
                    self.required_attr_dict(&mut p.attrs)?;
                }
                let (inputs, results, pos) = self.colon_function_type()?;
                p.operands = self.typed_operands(uses, &inputs, pos)?;
                p.regions.push(self.region_with(Some(entry_args(&p.operands)))?);
                p.results = results;
            }
            Form::Benchmark => self.benchmark(&mut p)?,
            Form::Module => {
                if self.peek() == Some(b'@') {
                    let name = self.symbol_name_attr()?;
                    p.attrs.push(("sym_name".into(), name));
                }
                if self.eat_keyword("attributes") {
                    self.required_attr_dict(&mut p.attrs)?;
                }
                let region = self.region_with(None)?;
                if self.regions[region as usize].blocks.is_empty() {
                    // A module always has its one block, empty or not.
                    let block = self.blocks.len() as u32;
                    self.blocks.push(PBlock { defined: true, ..PBlock::default() });
                    self.regions[region as usize].blocks.push(block);
                }
                p.regions.push(region);
            }
            Form::Func => self.func(&mut p)?,
        }
        Ok(p)
    }

    /// `func.func [visibility] @name(args) [-> results] [attributes {...}] [{body}]`.
    fn func(&mut self, p: &mut Parts<'s>) -> R<()> {
        for visibility in ["private", "public", "nested"] {
            if self.eat_keyword(visibility) {
                let value = self.name_attr(visibility);
                p.attrs.push(("sym_visibility".into(), value));
            }
        }
        let name = self.symbol_name_attr()?;
        p.attrs.push(("sym_name".into(), name));
        self.expect(b'(', "to start the function's arguments")?;
        let mut args: Vec<EntryArg<'s>> = Vec::new();
        let mut inputs = Vec::new();
        let mut arg_attrs = Vec::new();
        if !self.eat(b')') {
            loop {
                let named = if self.peek() == Some(b'%') {
                    let (name, number, pos) = self.value_use()?;
                    if number != 0 {
                        return self.err_at(pos, "a function argument name cannot have a '#' number");
                    }
                    self.expect(b':', "after a function argument name")?;
                    Some((name, pos))
                } else {
                    None
                };
                let ty = self.ty()?;
                arg_attrs.push(self.optional_dict_attr()?);
                let loc = self.optional_trailing_loc()?;
                if let Some((name, pos)) = named {
                    args.push(EntryArg { value: Operand { name, number: 0, pos, ty }, loc });
                }
                inputs.push(ty);
                if !self.eat(b',') {
                    break;
                }
            }
            self.expect(b')', "to end the function's arguments")?;
        }
        if !args.is_empty() && args.len() != inputs.len() {
            return self.err("either every function argument is named or none");
        }
        let mut results = Vec::new();
        let mut res_attrs = Vec::new();
        if self.eat_str("->") {
            if self.eat(b'(') {
                if !self.eat(b')') {
                    loop {
                        results.push(self.ty()?);
                        res_attrs.push(self.optional_dict_attr()?);
                        if !self.eat(b',') {
                            break;
                        }
                    }
                    self.expect(b')', "to end the function's results")?;
                }
            } else {
                results.push(self.ty()?);
                res_attrs.push(None);
            }
        }
        let fn_type = self.intern_type(Type::Function { inputs: inputs.into(), results: results.into() });
        let fn_type = self.intern_attr(Attribute::Type(fn_type));
        p.attrs.push(("function_type".into(), fn_type));
        for (key, list) in [("arg_attrs", arg_attrs), ("res_attrs", res_attrs)] {
            if list.iter().any(Option::is_some) {
                let empty = self.intern_attr(Attribute::Dictionary(Vec::new().into()));
                let items: Vec<AttrId> = list.into_iter().map(|d| d.unwrap_or(empty)).collect();
                let array = self.intern_attr(Attribute::Array(items.into()));
                p.attrs.push((key.into(), array));
            }
        }
        if self.eat_keyword("attributes") {
            self.required_attr_dict(&mut p.attrs)?;
        }
        let body = if self.peek() == Some(b'{') {
            self.region_with(Some(args))?
        } else {
            self.regions.push(PRegion::default());
            self.regions.len() as u32 - 1
        };
        p.regions.push(body);
        Ok(())
    }

    /// `(%handler[, %chain]) "op.name"(%a) {op attrs} {func attrs} : N` (see [`Form::ExecuteOp`]).
    fn execute_op(&mut self, p: &mut Parts<'s>, chains: u8, pos: usize) -> R<()> {
        let fixed = self.paren_operands()?;
        if fixed.len() != 1 + usize::from(chains) {
            let wanted = if chains == 0 { "the op handler" } else { "the op handler and the chain" };
            return self.err_at(pos, format!("expected {wanted} in parentheses, found {} operands", fixed.len()));
        }
        self.ws();
        let name_pos = self.pos;
        let name = self.attr()?;
        if !matches!(self.module.context.attr(name), Attribute::String { ty: None, .. }) {
            return self.err_at(name_pos, "expected the op's name as a string");
        }
        p.attrs.push(("op_name".into(), name));
        let uses = self.paren_operands()?;
        let op_attrs = self.ordered_attr_pairs()?;
        let func_attrs = self.ordered_attr_pairs()?;
        p.attrs.push(("op_attrs".into(), op_attrs));
        p.attrs.push(("op_func_attrs".into(), func_attrs));
        let count = if self.eat(b':') {
            self.ws();
            let at = self.pos;
            let digits = self.integer_token();
            match digits.and_then(|d| std::str::from_utf8(d).ok()?.parse::<u32>().ok()) {
                Some(count) => count,
                None => return self.err_at(at, "expected the number of results after ':'"),
            }
        } else {
            0
        };
        let chain = self.fixed_type(CHAIN)?;
        let handler = self.fixed_type(OP_HANDLER)?;
        let tensor = self.fixed_type(TENSOR_HANDLE)?;
        let fixed_types: Vec<TypeId> = std::iter::once(handler).chain(vec![chain; usize::from(chains)]).collect();
        p.operands = self.typed_operands(fixed, &fixed_types, pos)?;
        let tensors = vec![tensor; uses.len()];
        p.operands.extend(self.typed_operands(uses, &tensors, pos)?);
        p.results = vec![chain; usize::from(chains)];
        p.results.extend(std::iter::repeat_n(tensor, count as usize));
        Ok(())
    }

    /// `{k = v, ...}` when one is next, as an array of `[k, v]` pairs in written order (a key
    /// without a value is a unit attribute), else the empty array; a key given twice is an error.
    fn ordered_attr_pairs(&mut self) -> R<AttrId> {
        let mut pairs: Vec<AttrId> = Vec::new();
        if !self.eat(b'{') {
            return Ok(self.intern_attr(Attribute::Array(pairs.into())));
        }
        let mut keys: Vec<Vec<u8>> = Vec::new();
        if !self.eat(b'}') {
            loop {
                self.ws();
                let pos = self.pos;
                let key = self.key("an attribute name")?.into_owned();
                if keys.contains(&key) {
                    let key = String::from_utf8_lossy(&key).into_owned();
                    return self.err_at(pos, format!("attribute '{key}' occurs more than once in the attribute list"));
                }
                let value = if self.eat(b'=') { self.attr()? } else { self.intern_attr(Attribute::Unit) };
                let name = self.name_attr(&String::from_utf8_lossy(&key));
                pairs.push(self.intern_attr(Attribute::Array(vec![name, value].into())));
                keys.push(key);
                if !self.eat(b',') {
                    break;
                }
            }
            self.expect(b'}', "to end the attributes")?;
        }
        Ok(self.intern_attr(Attribute::Array(pairs.into())))
    }

    /// `"name"(%a : T, ...) key = N, ... {body}`: `tfrt_test.benchmark`.
    fn benchmark(&mut self, p: &mut Parts<'s>) -> R<()> {
        let name = self.attr()?;
        if !matches!(self.module.context.attr(name), Attribute::String { .. }) {
            return self.err("expected the benchmark's name as a string");
        }
        p.attrs.push(("name".into(), name));
        self.expect(b'(', "to start the benchmark's operands")?;
        if !self.eat(b')') {
            loop {
                let (name, number, pos) = self.value_use()?;
                self.expect(b':', "after a benchmark operand")?;
                let ty = self.ty()?;
                p.operands.push(Operand { name, number, pos, ty });
                if !self.eat(b',') {
                    break;
                }
            }
            self.expect(b')', "to end the benchmark's operands")?;
        }
        let i32_ty = self.int_type(32);
        loop {
            let Some(key) = self.bare_ident().map(|k| String::from_utf8_lossy(k).into_owned()) else {
                let found = self.describe_next();
                return self.err(format!("expected a benchmark setting (`max_count = N`), found {found}"));
            };
            self.expect(b'=', "after a benchmark setting")?;
            let value = self.typed_literal_attr(i32_ty)?;
            p.attrs.push((key, value));
            if !self.eat(b',') {
                break;
            }
        }
        if !p.attrs.iter().any(|(k, _)| k == "num_warmup_runs") {
            let one = crate::ir::ApInt::from_u64(32, 1);
            let value = self.intern_attr(Attribute::Integer { ty: i32_ty, value: one });
            p.attrs.push(("num_warmup_runs".into(), value));
        }
        p.regions.push(self.region_with(Some(entry_args(&p.operands)))?);
        p.results = vec![self.fixed_type(CHAIN)?];
        Ok(())
    }

    /// The `else` region `tfrt.if` gets when its text has none: the body's arguments and a bare
    /// `tfrt.return`, located at the op.
    fn returning_region(&mut self, inputs: &[TypeId], pos: usize) -> u32 {
        let loc = self.source_loc(pos);
        let region = self.regions.len() as u32;
        let block = self.blocks.len() as u32;
        self.regions.push(PRegion { blocks: vec![block] });
        self.blocks.push(PBlock { defined: true, pos, ..PBlock::default() });
        for (index, &ty) in inputs.iter().enumerate() {
            let slot = self.new_value(ty, PDef::BlockArgument { block, index: index as u32 }, pos);
            self.values[slot as usize].loc = Some(LocRef::Attr(loc));
            self.blocks[block as usize].args.push(slot);
        }
        let name = self.op_name(b"tfrt.return");
        let op = self.push_op(block, name);
        self.ops[op as usize].loc = LocRef::Attr(loc);
        region
    }

    // ---- pieces of custom forms ----

    /// `%a, %b#1, ...` (possibly none).
    fn bare_operands(&mut self) -> R<Vec<Use<'s>>> {
        let mut uses = Vec::new();
        if self.peek() != Some(b'%') {
            return Ok(uses);
        }
        loop {
            uses.push(self.value_use()?);
            if !self.eat(b',') {
                return Ok(uses);
            }
        }
    }

    /// `(%a, %b)`.
    fn paren_operands(&mut self) -> R<Vec<Use<'s>>> {
        self.expect(b'(', "to start the operand list")?;
        let uses = self.bare_operands()?;
        self.expect(b')', "to end the operand list")?;
        Ok(uses)
    }

    /// Operand uses with `types`, which must be as many.
    fn typed_operands(&self, uses: Vec<Use<'s>>, types: &[TypeId], pos: usize) -> R<Vec<Operand<'s>>> {
        if uses.len() != types.len() {
            return self.err_at(pos, format!("{} operands present, but expected {}", uses.len(), types.len()));
        }
        Ok(uses.into_iter().zip(types).map(|((name, number, pos), &ty)| Operand { name, number, pos, ty }).collect())
    }

    /// Operand uses with the types of the op's row.
    fn fixed_operands(&mut self, m: &Matched, uses: Vec<Use<'s>>, types: &[&str], pos: usize) -> R<Vec<Operand<'s>>> {
        let types = self.fixed_types(m, types)?;
        self.typed_operands(uses, &types, pos)
    }

    fn fixed_types(&mut self, m: &Matched, texts: &[&str]) -> R<Vec<TypeId>> {
        texts.iter().map(|text| self.fixed_type(&m.type_text(text))).collect()
    }

    /// A type written in the op table.
    fn fixed_type(&mut self, text: &str) -> R<TypeId> {
        let mut sub = Parser::new(text.as_bytes(), &super::ParseOptions::default());
        sub.module.context = std::mem::take(&mut self.module.context);
        let ty = sub.ty();
        self.module.context = std::mem::take(&mut sub.module.context);
        ty.map_err(|e| self.error_at(self.pos, format!("type '{text}' of the op table: {}", e.message)))
    }

    fn int_type(&mut self, width: u32) -> TypeId {
        self.intern_type(Type::Integer { width, signedness: Signedness::Signless })
    }

    /// `: T1, T2`.
    fn colon_type_list(&mut self) -> R<Vec<TypeId>> {
        self.expect(b':', "before the operand types")?;
        self.type_list()
    }

    fn type_list(&mut self) -> R<Vec<TypeId>> {
        let mut types = vec![self.ty()?];
        while self.eat(b',') {
            types.push(self.ty()?);
        }
        Ok(types)
    }

    /// `: (T1, T2) -> R`: inputs, results and where the type is.
    fn colon_function_type(&mut self) -> R<(Vec<TypeId>, Vec<TypeId>, usize)> {
        self.expect(b':', "before the operation's type")?;
        self.ws();
        let pos = self.pos;
        let ty = self.ty()?;
        match self.module.context.ty(ty) {
            Type::Function { inputs, results } => Ok((inputs.to_vec(), results.to_vec(), pos)),
            _ => self.err_at(pos, "expected a function type `(operand types) -> result types`"),
        }
    }

    /// `@name`, a flat symbol reference.
    fn symbol(&mut self) -> R<AttrId> {
        self.ws();
        let pos = self.pos;
        if self.peek() != Some(b'@') {
            let found = self.describe_next();
            return self.err(format!("expected a symbol reference '@name', found {found}"));
        }
        let attr = self.attr()?;
        match self.module.context.attr(attr) {
            Attribute::FlatSymbolRef(_) => Ok(attr),
            _ => self.err_at(pos, "expected a flat symbol reference '@name'"),
        }
    }

    /// `@name` as the string attribute that names a symbol.
    fn symbol_name_attr(&mut self) -> R<AttrId> {
        let symbol = self.symbol()?;
        match self.module.context.attr(symbol) {
            Attribute::FlatSymbolRef(name) => Ok(*name),
            _ => self.err("expected a symbol name"),
        }
    }

    fn expect_keyword(&mut self, keyword: &str) -> R<()> {
        if self.eat_keyword(keyword) {
            return Ok(());
        }
        let found = self.describe_next();
        self.err(format!("expected '{keyword}', found {found}"))
    }

    /// `{...}` when one is next, added to `attrs`.
    fn optional_attr_dict(&mut self, attrs: &mut Vec<(String, AttrId)>) -> R<()> {
        if self.peek() == Some(b'{') {
            self.required_attr_dict(attrs)?;
        }
        Ok(())
    }

    /// `{...}`, added to `attrs`; a name given twice is an error.
    fn required_attr_dict(&mut self, attrs: &mut Vec<(String, AttrId)>) -> R<()> {
        self.ws();
        let pos = self.pos;
        if self.peek() != Some(b'{') {
            let found = self.describe_next();
            return self.err(format!("expected an attribute dictionary, found {found}"));
        }
        let dict = self.attr()?;
        let Attribute::Dictionary(entries) = self.module.context.attr(dict).clone() else {
            return self.err_at(pos, "expected an attribute dictionary");
        };
        for (key, value) in entries.iter() {
            let key = match self.module.context.attr(*key) {
                Attribute::String { value, .. } => self.module.context.str(*value).into_owned(),
                _ => String::new(),
            };
            if attrs.iter().any(|(k, _)| *k == key) {
                return self.err_at(pos, format!("attribute '{key}' is given twice"));
            }
            attrs.push((key, *value));
        }
        Ok(())
    }

    /// A `{...}` dictionary attribute when one is next (argument and result attributes).
    fn optional_dict_attr(&mut self) -> R<Option<AttrId>> {
        if self.peek() != Some(b'{') {
            return Ok(None);
        }
        let mut entries = Vec::new();
        self.required_attr_dict(&mut entries)?;
        Ok(self.attr_dict(entries))
    }

    /// Whether the `{` next opens an attribute dictionary rather than a region: a dictionary
    /// starts with a name followed by `=`, `,` or `}`.
    fn at_attr_dict(&mut self) -> bool {
        if self.peek() != Some(b'{') {
            return false;
        }
        let save = self.pos;
        self.pos += 1;
        let is_dict = match self.peek() {
            Some(b'"') => self.string_lit().is_ok() && matches!(self.peek(), Some(b'=' | b',' | b'}')),
            Some(b) if super::is_ident_start(b) => {
                self.bare_ident();
                matches!(self.peek(), Some(b'=' | b','))
            }
            _ => false,
        };
        self.pos = save;
        is_dict
    }
}

/// Entry block arguments named and typed like `operands` (a custom op's region shadows them).
/// The attributes naming the callees of an op of `m`'s form.
fn callee_names(m: &Matched) -> &'static [&'static str] {
    m.syntax.form.callees().map_or(&[], |callees| callees.names)
}

fn entry_args<'s>(operands: &[Operand<'s>]) -> Vec<EntryArg<'s>> {
    operands.iter().map(|o| EntryArg { value: o.clone(), loc: None }).collect()
}
