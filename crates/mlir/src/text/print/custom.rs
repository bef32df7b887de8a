//! The custom forms of [`crate::text::syntax`], printed as upstream's printers (ODS's
//! declarative ones and TFRT's hand-written ones) print them, spaces included. An op is printed
//! in its custom form only when it has the shape that form can spell back (as upstream prints an
//! op that fails verification in the generic form); see [`Printer::fits`].

use super::Printer;
use crate::ir::{AttrId, Attribute, OpId, Properties, RegionId, Type, TypeId, ValueId};
use crate::text::syntax::{Form, Matched, CHAIN, OP_HANDLER, TENSOR_HANDLE};

/// What the `fits` checks need of one attribute.
enum Want {
    Symbol,
    Array,
    String,
    /// A number or `true`/`false` of the type with this text.
    Literal(String),
    Any,
}

impl Printer<'_> {
    /// Whether `op` has the shape its custom form can spell: the types the form leaves out are
    /// the table's, the attributes it spells are there with the right kinds, its regions have
    /// the arguments the form derives from the operands.
    pub(super) fn fits(&self, op: OpId, m: &Matched) -> bool {
        let module = self.module;
        let o = module.op(op);
        if o.successors.len > 0 || matches!(o.properties, Properties::Opaque(_)) {
            return false;
        }
        let operands = module.operands(op);
        let results: Vec<ValueId> = module.results(op).collect();
        let regions = module.op_regions(op);
        let types = |values: &[ValueId]| -> Vec<String> {
            values.iter().map(|&v| self.type_text(module.value(v).ty)).collect()
        };
        let fixed = |texts: &[&str]| -> Vec<String> { texts.iter().map(|t| m.type_text(t)).collect() };
        let attrs = module.attributes(op);
        let names: Vec<String> = attrs.iter().map(|&(k, _)| self.key_text(k)).collect();
        let has = |name: &str, want: Want| self.attr_is(&attrs, name, want);
        let only = |allowed: &[&str]| names.iter().all(|n| allowed.contains(&n.as_str()));
        let first_is = |width: &str| operands.first().is_some_and(|&v| self.type_text(module.value(v).ty) == width);
        let no_regions = regions.is_empty();
        match m.syntax.form {
            Form::Operands { operands: ins, results: outs } => {
                no_regions && types(operands) == fixed(ins) && types(&results) == fixed(outs)
            }
            Form::OperandsAttr { operands: ins, results: outs, attr, literal } => {
                let want = match literal {
                    Some(text) => Want::Literal(m.type_text(text)),
                    None => Want::Any,
                };
                no_regions && types(operands) == fixed(ins) && types(&results) == fixed(outs) && has(attr, want)
            }
            Form::ComplexConstant => {
                let dtype = m.type_text("$t");
                let elem = dtype.strip_prefix("complex<").and_then(|e| e.strip_suffix('>')).unwrap_or("").to_string();
                no_regions
                    && operands.is_empty()
                    && types(&results) == [dtype]
                    && has("real", Want::Literal(elem.clone()))
                    && has("imaginary", Want::Literal(elem))
            }
            Form::TypedOperands { results: outs } => no_regions && types(&results) == fixed(outs),
            Form::Return => no_regions && results.is_empty() && attrs.is_empty(),
            Form::Call => no_regions && has("callee", Want::Symbol),
            Form::Once => no_regions && has("function", Want::Symbol),
            Form::Cond => {
                no_regions && first_is("i1") && has("a_true_fn", Want::Symbol) && has("b_false_fn", Want::Symbol)
            }
            Form::Case => no_regions && first_is("i32") && has("branches", Want::Array),
            Form::While => {
                no_regions
                    && first_is("i1")
                    && has("body_fn", Want::Symbol)
                    && has("parallel_iterations", Want::Literal("i64".into()))
            }
            Form::ExecuteOp { chains } => {
                let chains = usize::from(chains);
                let ins = types(operands);
                let outs = types(&results);
                no_regions
                    && ins.len() > chains
                    && ins[0] == OP_HANDLER
                    && ins[1..=chains].iter().all(|t| t == CHAIN)
                    && ins[chains + 1..].iter().all(|t| t == TENSOR_HANDLE)
                    && outs.len() >= chains
                    && outs[..chains].iter().all(|t| t == CHAIN)
                    && outs[chains..].iter().all(|t| t == TENSOR_HANDLE)
                    && names.len() == 3
                    && has("op_name", Want::String)
                    && self.attr_pairs(&attrs, "op_attrs").is_some()
                    && self.attr_pairs(&attrs, "op_func_attrs").is_some()
            }
            Form::TensorCond | Form::TensorWhile => {
                let ins = types(operands);
                let chain_at = usize::from(matches!(m.syntax.form, Form::TensorCond));
                let symbols = m.syntax.form.callees().map_or(&[][..], |callees| callees.names);
                no_regions
                    && ins.len() > chain_at
                    && (chain_at == 0 || ins[0] == TENSOR_HANDLE)
                    && ins[chain_at] == CHAIN
                    && types(&results).first().is_some_and(|t| t == CHAIN)
                    && symbols.iter().all(|&s| has(s, Want::Symbol))
            }
            Form::If => {
                first_is("i1") && regions.len() == 2 && regions.iter().all(|&r| self.entry_args_are(r, &operands[1..]))
            }
            Form::Repeat => {
                first_is("i32")
                    && regions.len() == 1
                    && self.entry_args_are(regions[0], &operands[1..])
                    && types(&results) == types(&operands[1..])
            }
            Form::ParallelFor | Form::ParallelCall => {
                let bounds = operands.len() >= 3 && types(&operands[..3]) == ["i32", "i32", "i32"];
                let chain = types(&results) == [CHAIN];
                if matches!(m.syntax.form, Form::ParallelCall) {
                    return bounds && chain && no_regions && has("callee", Want::Symbol) && only(&["callee"]);
                }
                let named: Vec<ValueId> =
                    operands.iter().enumerate().filter(|&(i, _)| i != 2).map(|(_, &v)| v).collect();
                bounds && chain && attrs.is_empty() && regions.len() == 1 && self.entry_args_are(regions[0], &named)
            }
            Form::DoAsync => regions.len() == 1 && self.entry_args_are(regions[0], operands),
            Form::Benchmark => {
                let settings_ok = names.iter().filter(|n| *n != "name").all(|n| has(n, Want::Literal("i32".into())));
                types(&results) == [CHAIN]
                    && has("name", Want::String)
                    && names.len() > 1
                    && settings_ok
                    && regions.len() == 1
                    && self.entry_args_are(regions[0], operands)
            }
            Form::Module => {
                operands.is_empty()
                    && results.is_empty()
                    && regions.len() == 1
                    && module.region(regions[0]).blocks.len() == 1
                    && self.entry_args_are(regions[0], &[])
                    && (!names.iter().any(|n| n == "sym_name") || has("sym_name", Want::String))
            }
            Form::Func => operands.is_empty() && results.is_empty() && regions.len() == 1 && self.func_fits(op),
        }
    }

    /// Whether a `func.func` has the attributes its custom form spells, consistent with its body.
    fn func_fits(&self, op: OpId) -> bool {
        let module = self.module;
        let attrs = module.attributes(op);
        let Some(Type::Function { inputs, results }) =
            self.attr_named(&attrs, "function_type").and_then(|a| match module.context.attr(a) {
                Attribute::Type(ty) => Some(module.context.ty(*ty)),
                _ => None,
            })
        else {
            return false;
        };
        let lists_fit = |key: &str, len: usize| match self.attr_named(&attrs, key).map(|a| module.context.attr(a)) {
            None => true,
            Some(Attribute::Array(items)) => {
                items.len() == len && items.iter().all(|&d| matches!(module.context.attr(d), Attribute::Dictionary(_)))
            }
            Some(_) => false,
        };
        let body = module.op_regions(op)[0];
        let body_fits = match module.region(body).blocks.first() {
            None => true,
            Some(&entry) => {
                module.arguments(entry).len() == inputs.len()
                    && module.arguments(entry).zip(inputs.iter()).all(|(a, &t)| module.value(a).ty == t)
            }
        };
        self.attr_is(&attrs, "sym_name", Want::String)
            && (self.attr_named(&attrs, "sym_visibility").is_none()
                || self.attr_is(&attrs, "sym_visibility", Want::String))
            && lists_fit("arg_attrs", inputs.len())
            && lists_fit("res_attrs", results.len())
            && body_fits
    }

    /// Whether a region has one block whose arguments have the types of `values`.
    fn entry_args_are(&self, region: RegionId, values: &[ValueId]) -> bool {
        let module = self.module;
        let blocks = &module.region(region).blocks;
        blocks.len() == 1
            && module.arguments(blocks[0]).len() == values.len()
            && module.arguments(blocks[0]).zip(values).all(|(a, &v)| module.value(a).ty == module.value(v).ty)
    }

    fn attr_named(&self, attrs: &[(AttrId, AttrId)], name: &str) -> Option<AttrId> {
        attrs.iter().find(|&&(k, _)| self.key_text(k) == name).map(|&(_, v)| v)
    }

    fn attr_is(&self, attrs: &[(AttrId, AttrId)], name: &str, want: Want) -> bool {
        let ctx = &self.module.context;
        let Some(value) = self.attr_named(attrs, name) else { return false };
        match (want, ctx.attr(value)) {
            (Want::Symbol, Attribute::FlatSymbolRef(_)) => true,
            (Want::Array, Attribute::Array(_)) => true,
            (Want::String, Attribute::String { ty: None, .. }) => true,
            (Want::Literal(ty), Attribute::Integer { ty: t, .. } | Attribute::Float { ty: t, .. }) => {
                self.type_text(*t) == ty
            }
            (Want::Any, _) => true,
            _ => false,
        }
    }

    /// The `[key, value]` pairs of the array attribute `name` (`corert.executeop`'s
    /// `op_attrs`), or `None` when it is not such an array.
    fn attr_pairs(&self, attrs: &[(AttrId, AttrId)], name: &str) -> Option<Vec<(String, AttrId)>> {
        let ctx = &self.module.context;
        let Attribute::Array(items) = ctx.attr(self.attr_named(attrs, name)?) else { return None };
        items
            .iter()
            .map(|&item| match ctx.attr(item) {
                Attribute::Array(pair) if pair.len() == 2 => match ctx.attr(pair[0]) {
                    Attribute::String { value, ty: None } => Some((ctx.str(*value).into_owned(), pair[1])),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }

    fn key_text(&self, key: AttrId) -> String {
        let ctx = &self.module.context;
        match ctx.attr(key) {
            Attribute::String { value, .. } => ctx.str(*value).into_owned(),
            _ => String::new(),
        }
    }

    /// A type as upstream prints it.
    fn type_text(&self, ty: TypeId) -> String {
        let mut p = Printer {
            module: self.module,
            out: String::new(),
            options: self.options,
            distinct_ids: Default::default(),
            error: None,
            resolved: None,
            upstream: true,
            names: Vec::new(),
            dialects: Vec::new(),
            all_generic: false,
        };
        p.ty(ty);
        p.out
    }

    /// An attribute without the type its context gives it (`42`, `1.000000e-01`, `false`).
    fn attr_without_type(&mut self, attr: AttrId) {
        let ctx = &self.module.context;
        match ctx.attr(attr) {
            Attribute::Integer { ty, value } => {
                let (signed, bool) = match ctx.ty(*ty) {
                    Type::Integer { width, signedness } => {
                        (*signedness != crate::ir::Signedness::Unsigned, *width == 1)
                    }
                    _ => (true, false),
                };
                if bool {
                    self.out.push_str(if value.words()[0] & 1 == 1 { "true" } else { "false" });
                } else {
                    self.out.push_str(&super::attr::int_text(value, signed));
                }
            }
            Attribute::Float { ty, bits } => {
                let Type::Float(kind) = ctx.ty(*ty) else { return self.attr(attr) };
                let words = bits.words();
                let raw = u128::from(words[0]) | (u128::from(words.get(1).copied().unwrap_or(0)) << 64);
                self.out.push_str(&crate::float::print_float(raw, *kind));
            }
            _ => self.attr(attr),
        }
    }

    /// The custom form of `op` after its name.
    pub(super) fn custom_op(&mut self, op: OpId, m: &Matched, depth: usize) {
        let module = self.module;
        let operands = module.operands(op);
        let results: Vec<ValueId> = module.results(op).collect();
        let regions = module.op_regions(op);
        let attrs = module.attributes(op);
        let value_of = |p: &Self, name: &str| p.attr_named(&attrs, name);
        match m.syntax.form {
            Form::Operands { .. } => {
                if !operands.is_empty() {
                    self.out.push(' ');
                    self.asm_values(operands);
                }
                self.attr_dict(&attrs, &[], false);
            }
            Form::OperandsAttr { attr, literal, .. } => {
                if !operands.is_empty() {
                    self.out.push(' ');
                    self.asm_values(operands);
                }
                self.out.push(' ');
                if let Some(value) = value_of(self, attr) {
                    if literal.is_some() {
                        self.attr_without_type(value);
                    } else {
                        self.attr(value);
                    }
                }
                self.attr_dict(&attrs, &[attr], false);
            }
            Form::ComplexConstant => {
                for (i, part) in ["real", "imaginary"].into_iter().enumerate() {
                    self.out.push_str(if i == 0 { " " } else { ", " });
                    if let Some(value) = value_of(self, part) {
                        self.attr_without_type(value);
                    }
                }
                self.attr_dict(&attrs, &["real", "imaginary"], false);
            }
            Form::TypedOperands { .. } => {
                self.out.push(' ');
                self.asm_values(operands);
                self.attr_dict(&attrs, &[], false);
                self.out.push_str(" : ");
                self.asm_types(operands.iter().copied());
            }
            Form::Return => {
                if !operands.is_empty() {
                    self.out.push(' ');
                    self.asm_values(operands);
                    self.out.push_str(" : ");
                    self.asm_types(operands.iter().copied());
                }
            }
            Form::Call => {
                self.out.push(' ');
                if let Some(callee) = value_of(self, "callee") {
                    self.attr(callee);
                }
                self.out.push('(');
                self.asm_values(operands);
                self.out.push(')');
                self.attr_dict(&attrs, &["callee"], false);
                self.out.push_str(" : ");
                self.functional_type(operands, &results, false);
            }
            Form::Once | Form::Cond | Form::Case | Form::While | Form::TensorCond | Form::TensorWhile => {
                let form = &m.syntax.form;
                let symbols = form.callees().map_or(&[][..], |callees| callees.names);
                let rest = if matches!(form, Form::Once | Form::TensorWhile) {
                    operands
                } else {
                    self.out.push(' ');
                    self.asm_value(operands[0]);
                    &operands[1..]
                };
                for &symbol in symbols {
                    self.out.push(' ');
                    if let Some(value) = value_of(self, symbol) {
                        self.attr(value);
                    }
                }
                self.out.push('(');
                self.asm_values(rest);
                self.out.push(')');
                let mut elided = symbols.to_vec();
                elided.push("parallel_iterations");
                self.attr_dict(&attrs, &elided, false);
                if matches!(form, Form::While) {
                    self.out.push_str(" parallel_iterations(");
                    if let Some(value) = value_of(self, "parallel_iterations") {
                        self.attr_without_type(value);
                    }
                    self.out.push(')');
                }
                self.out.push_str(" : ");
                // corert's forms leave the chain they take and return out of their type.
                let chain = usize::from(matches!(form, Form::TensorCond | Form::TensorWhile));
                self.functional_type(&rest[chain..], &results[chain..], true);
            }
            Form::ExecuteOp { chains } => {
                let chains = usize::from(chains);
                self.out.push('(');
                self.asm_values(&operands[..=chains]);
                self.out.push_str(") ");
                if let Some(name) = value_of(self, "op_name") {
                    self.attr(name);
                }
                self.out.push('(');
                self.asm_values(&operands[chains + 1..]);
                self.out.push(')');
                for key in ["op_attrs", "op_func_attrs"] {
                    let pairs = self.attr_pairs(&attrs, key).unwrap_or_default();
                    if !pairs.is_empty() {
                        self.out.push_str(" {");
                        for (i, (name, value)) in pairs.into_iter().enumerate() {
                            if i > 0 {
                                self.out.push_str(", ");
                            }
                            self.out.push_str(&name);
                            self.out.push_str(" = ");
                            self.attr(value);
                        }
                        self.out.push('}');
                    }
                }
                if results.len() > chains {
                    self.out.push_str(&format!(" : {}", results.len() - chains));
                }
            }
            Form::If => {
                self.out.push(' ');
                self.asm_values(operands);
                self.attr_dict(&attrs, &[], false);
                self.out.push_str(" : ");
                self.functional_type(&operands[1..], &results, true);
                self.out.push(' ');
                self.shadow(regions[0], &operands[1..]);
                self.out.push(' ');
                self.asm_region(regions[0], depth, false, false);
                self.out.push_str(" else ");
                self.shadow(regions[1], &operands[1..]);
                self.out.push(' ');
                self.asm_region(regions[1], depth, false, false);
            }
            Form::Repeat => {
                self.out.push(' ');
                self.asm_values(operands);
                self.attr_dict(&attrs, &[], false);
                if operands.len() > 1 {
                    self.out.push_str(" : ");
                    self.asm_types(operands[1..].iter().copied());
                }
                self.shadow(regions[0], &operands[1..]);
                self.out.push(' ');
                self.asm_region(regions[0], depth, false, false);
            }
            Form::ParallelFor | Form::ParallelCall => {
                self.out.push(' ');
                self.asm_value(operands[0]);
                self.out.push_str(" to ");
                self.asm_value(operands[1]);
                self.out.push_str(" fixed ");
                self.asm_value(operands[2]);
                if matches!(m.syntax.form, Form::ParallelCall) {
                    self.out.push(' ');
                    if let Some(callee) = value_of(self, "callee") {
                        self.attr(callee);
                    }
                    self.out.push('(');
                    self.asm_values(&operands[3..]);
                    self.out.push(')');
                } else if operands.len() > 3 {
                    self.out.push_str(", ");
                    self.asm_values(&operands[3..]);
                }
                if operands.len() > 3 {
                    self.out.push_str(" : ");
                    self.asm_types(operands[3..].iter().copied());
                }
                if matches!(m.syntax.form, Form::ParallelFor) {
                    let named: Vec<ValueId> =
                        operands.iter().enumerate().filter(|&(i, _)| i != 2).map(|(_, &v)| v).collect();
                    self.shadow(regions[0], &named);
                    self.out.push(' ');
                    self.asm_region(regions[0], depth, false, false);
                }
            }
            Form::DoAsync => {
                self.out.push(' ');
                self.asm_values(operands);
                if !attrs.is_empty() {
                    self.out.push_str(" attributes ");
                    self.attr_dict(&attrs, &[], false);
                }
                self.out.push_str(" : ");
                self.functional_type(operands, &results, true);
                self.out.push(' ');
                self.shadow(regions[0], operands);
                self.out.push(' ');
                self.asm_region(regions[0], depth, false, false);
            }
            Form::Benchmark => {
                self.out.push(' ');
                if let Some(name) = value_of(self, "name") {
                    self.attr(name);
                }
                self.out.push('(');
                for (i, &v) in operands.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.asm_value(v);
                    self.out.push_str(" : ");
                    self.ty(module.value(v).ty);
                }
                self.out.push_str(") ");
                let settings: Vec<(String, AttrId)> =
                    attrs.iter().map(|&(k, v)| (self.key_text(k), v)).filter(|(k, _)| k != "name").collect();
                for (i, (key, v)) in settings.into_iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.out.push_str(&key);
                    self.out.push_str(" = ");
                    if let Attribute::Integer { value, .. } = module.context.attr(v) {
                        self.out.push_str(&super::attr::int_text(value, false));
                    }
                }
                self.out.push_str("  ");
                self.shadow(regions[0], operands);
                self.asm_region(regions[0], depth, false, false);
            }
            Form::Module => {
                if let Some(name) = value_of(self, "sym_name") {
                    self.out.push_str(" @");
                    self.symbol_text(name);
                }
                self.attr_dict(&attrs, &["sym_name"], true);
                self.out.push(' ');
                self.asm_region(regions[0], depth, false, false);
            }
            Form::Func => self.func(op, &attrs, depth),
        }
    }

    /// `(T1, T2) -> R` as upstream's `printFunctionalType` (`parens`: results always in
    /// parentheses, as the ODS formats `( type(results) )` spell them).
    fn functional_type(&mut self, inputs: &[ValueId], results: &[ValueId], parens: bool) {
        self.out.push('(');
        self.asm_types(inputs.iter().copied());
        self.out.push_str(") -> ");
        let module = self.module;
        let wrap = parens
            || results.len() != 1
            || matches!(module.context.ty(module.value(results[0]).ty), Type::Function { .. });
        if wrap {
            self.out.push('(');
        }
        self.asm_types(results.iter().copied());
        if wrap {
            self.out.push(')');
        }
    }

    /// A symbol name (the value of a string attribute) after its `@`.
    fn symbol_text(&mut self, name: AttrId) {
        let ctx = &self.module.context;
        if let Attribute::String { value, .. } = ctx.attr(name) {
            self.keyword_or_string(ctx.str_bytes(*value));
        }
    }

    /// `func.func [visibility] @name(%arg0: T {attrs}) -> R attributes {...} {body}`.
    fn func(&mut self, op: OpId, attrs: &[(AttrId, AttrId)], depth: usize) {
        let module = self.module;
        let ctx = &module.context;
        self.out.push(' ');
        if let Some(Attribute::String { value, .. }) = self.attr_named(attrs, "sym_visibility").map(|a| ctx.attr(a)) {
            self.out.push_str(&ctx.str(*value));
            self.out.push(' ');
        }
        self.out.push('@');
        if let Some(name) = self.attr_named(attrs, "sym_name") {
            self.symbol_text(name);
        }
        let Some(Attribute::Type(fn_ty)) = self.attr_named(attrs, "function_type").map(|a| ctx.attr(a)) else { return };
        let Type::Function { inputs, results } = ctx.ty(*fn_ty) else { return };
        let list = |key: &str| match self.attr_named(attrs, key).map(|a| ctx.attr(a)) {
            Some(Attribute::Array(items)) => items.to_vec(),
            _ => Vec::new(),
        };
        let (arg_attrs, res_attrs) = (list("arg_attrs"), list("res_attrs"));
        let body = module.op_regions(op)[0];
        let entry = module.region(body).blocks.first().copied();
        self.out.push('(');
        for (i, &ty) in inputs.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            let arg = entry.map(|b| crate::ir::ValueId(module.block(b).arguments.start + i as u32));
            if let Some(arg) = arg {
                self.asm_value(arg);
                self.out.push_str(": ");
            }
            self.ty(ty);
            if let Some(Attribute::Dictionary(entries)) = arg_attrs.get(i).map(|&d| ctx.attr(d)) {
                self.attr_dict(entries, &[], false);
            }
            if let Some(arg) = arg.filter(|_| self.options.debuginfo) {
                self.out.push(' ');
                match module.value(arg).loc {
                    Some(loc) => self.loc(loc),
                    None => self.out.push_str("loc(unknown)"),
                }
            }
        }
        self.out.push(')');
        if !results.is_empty() {
            self.out.push_str(" -> ");
            let has_attrs =
                matches!(res_attrs.first().map(|&d| ctx.attr(d)), Some(Attribute::Dictionary(e)) if !e.is_empty());
            let parens = results.len() > 1 || matches!(ctx.ty(results[0]), Type::Function { .. }) || has_attrs;
            if parens {
                self.out.push('(');
            }
            for (i, &ty) in results.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.ty(ty);
                if let Some(Attribute::Dictionary(entries)) = res_attrs.get(i).map(|&d| ctx.attr(d)) {
                    self.attr_dict(entries, &[], false);
                }
            }
            if parens {
                self.out.push(')');
            }
        }
        let elided = ["sym_visibility", "function_type", "arg_attrs", "res_attrs", "sym_name"];
        self.attr_dict(attrs, &elided, true);
        if entry.is_some() {
            self.out.push(' ');
            self.asm_region(body, depth, false, false);
        }
    }
}
