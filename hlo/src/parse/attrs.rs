//! The one attribute table: every attribute key HLO text can carry on an instruction, with the
//! function that parses its value into [`Attrs`] and the function that prints it back. The
//! table order is the printer's canonical order. Keys in [`VERBATIM_KEYS`] (no effect on
//! values) are kept as text in `Attrs::extra`; any other key is an error naming it, so typos
//! such as `dimesions=` are caught.
//!
//! Computation references and `control-predecessors` are names here; the module parser
//! resolves them after the whole module is read ([`InstCtx::comp_refs`], [`InstCtx::preds`]).

use super::lexer::{Cursor, PResult};
use crate::attrs::*;
use crate::opcode::Opcode;
use crate::print::Printer;

/// Which computation-valued field a name goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompSlot {
    ToApply,
    Calls,
    Condition,
    Body,
    TrueComputation,
    FalseComputation,
    BranchComputations,
    Select,
    Scatter,
    CalledComputations,
}

/// Attributes of one instruction while it is being parsed.
pub struct InstCtx<'a> {
    pub opcode: Opcode,
    pub attrs: Attrs,
    /// Computation names to resolve: slot, names with their offsets.
    pub comp_refs: Vec<(CompSlot, Vec<(&'a str, usize)>)>,
    /// `control-predecessors` names with offsets.
    pub preds: Vec<(&'a str, usize)>,
    /// Flat triangular-solve options seen (`left_side=`, ...), merged at the end.
    tri: Option<TriangularSolveOptions>,
}

impl<'a> InstCtx<'a> {
    pub fn new(opcode: Opcode) -> InstCtx<'a> {
        InstCtx {
            opcode,
            attrs: Attrs::default(),
            comp_refs: Vec::new(),
            preds: Vec::new(),
            tri: None,
        }
    }

    fn tri(&mut self) -> &mut TriangularSolveOptions {
        self.tri.get_or_insert(TriangularSolveOptions {
            left_side: false,
            lower: false,
            unit_diagonal: false,
            transpose_a: TransposeKind::NoTranspose,
        })
    }

    /// Completes derived fields after all attributes are read: flat triangular-solve options,
    /// and the composite fields of an `is_composite=true` call from its `frontend_attributes`.
    pub fn finish(&mut self) {
        if let Some(t) = self.tri.take() {
            self.attrs.triangular_solve_options = Some(t);
        }
        if self.attrs.is_composite == Some(true) && self.attrs.composite_name.is_none() {
            let fe = self
                .attrs
                .extra
                .iter()
                .find(|(k, _)| k == "frontend_attributes");
            if let Some((_, text)) = fe {
                let (name, attrs, version) = composite_from_frontend(text);
                self.attrs.composite_name = name;
                self.attrs.composite_attributes = attrs;
                self.attrs.composite_version = version;
            }
        }
    }
}

/// Splits a `{k=v,k=v}` dictionary (values balanced, strings whole) into pairs.
pub fn split_dict<'t>(text: &'t str) -> Vec<(&'t str, &'t str)> {
    let inner = text
        .trim()
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .unwrap_or("");
    let mut out = Vec::new();
    let b = inner.as_bytes();
    let (mut depth, mut start, mut i) = (0i32, 0usize, 0usize);
    let mut push = |s: &'t str| {
        if let Some((k, v)) = s.split_once('=') {
            out.push((k.trim(), v.trim()));
        }
    };
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'{' | b'[' | b'(' => depth += 1,
            b'}' | b']' | b')' => depth -= 1,
            b',' if depth == 0 => {
                push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < inner.len() {
        push(&inner[start..]);
    }
    out
}

/// `composite.name`, `composite.attributes`, `composite.version` from a frontend-attributes
/// dictionary, as JAX prints composite calls.
fn composite_from_frontend(text: &str) -> (Option<String>, Option<String>, Option<i64>) {
    let mut r = (None, None, None);
    let unquote = |v: &str| {
        v.strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(v)
            .to_string()
    };
    for (k, v) in split_dict(text) {
        match k {
            "composite.name" => r.0 = Some(unquote(v)),
            "composite.attributes" => r.1 = Some(v.to_string()),
            "composite.version" => r.2 = unquote(v).parse().ok(),
            _ => {}
        }
    }
    r
}

/// True if `frontend_attributes` text carries the composite fields (then the printer need not
/// print them separately).
pub fn frontend_has_composite(attrs: &Attrs) -> bool {
    attrs.extra.iter().any(|(k, v)| {
        k == "frontend_attributes" && split_dict(v).iter().any(|(k, _)| *k == "composite.name")
    })
}

/// Attribute keys kept verbatim in `Attrs::extra` (no effect on computed values).
pub const VERBATIM_KEYS: &[&str] = &[
    "async_execution_thread",
    "backend_config",
    "cross_program_prefetch_index",
    "custom_call_schedule",
    "delta",
    "domain",
    "frontend_attributes",
    "metadata",
    "operand_layout_constraints",
    "origin",
    "output_to_operand_aliasing",
    "padding_type",
    "parameter_replication",
    "raw_backend_config",
    "result_accuracy",
    "schedule",
    "sharding",
    "sparsity",
    "statistics",
    "statistics_viz",
];

pub type ParseFn = for<'a> fn(&mut Cursor<'a>, &mut InstCtx<'a>) -> PResult<()>;
pub type PrintFn = fn(&Attrs, Opcode, &mut Printer);

/// One row of the attribute table.
pub struct AttrDef {
    pub key: &'static str,
    pub parse: ParseFn,
    pub print: PrintFn,
}

/// A typed `Option` field: `$parse` reads the value with cursor `$c`, `$print` writes `$v`.
macro_rules! opt {
    ($key:literal, $field:ident, |$c:ident| $parse:expr, |$p:ident, $v:ident| $print:expr) => {
        AttrDef {
            key: $key,
            parse: |$c, ctx| {
                ctx.attrs.$field = Some($parse);
                Ok(())
            },
            print: |a, _op, $p| {
                if let Some($v) = &a.$field {
                    $p.key($key);
                    $print;
                }
            },
        }
    };
}

macro_rules! list {
    ($key:literal, $field:ident) => {
        opt!($key, $field, |c| c.i64_list()?, |p, v| p.i64_list(v))
    };
}
macro_rules! int {
    ($key:literal, $field:ident) => {
        opt!($key, $field, |c| c.int("an integer")?, |p, v| p.int(*v))
    };
}
macro_rules! boolean {
    ($key:literal, $field:ident) => {
        opt!($key, $field, |c| c.boolean()?, |p, v| p.boolean(*v))
    };
}
macro_rules! string {
    ($key:literal, $field:ident) => {
        opt!($key, $field, |c| c.string("a quoted string")?, |p, v| p
            .string(v))
    };
}
macro_rules! enumeration {
    ($key:literal, $field:ident, $ty:ident, $what:literal) => {
        opt!(
            $key,
            $field,
            |c| c.enum_ident($what, &$ty::ALL, $ty::from_name, |e| e.name())?,
            |p, v| p.word(v.name())
        )
    };
}

/// A computation-valued attribute (one name or a `{a, b}` list).
macro_rules! comp {
    ($key:literal, $field:ident, $slot:ident) => {
        AttrDef {
            key: $key,
            parse: |c, ctx| {
                c.skip_ws()?;
                let at = c.pos;
                let name = c.name("a computation name")?;
                ctx.comp_refs.push((CompSlot::$slot, vec![(name, at)]));
                Ok(())
            },
            print: |a, _op, p| {
                if let Some(v) = a.$field {
                    p.key($key);
                    p.comp(v);
                }
            },
        }
    };
    ($key:literal, $field:ident, $slot:ident, list) => {
        AttrDef {
            key: $key,
            parse: |c, ctx| {
                let names = c.name_list("computation")?;
                ctx.comp_refs.push((CompSlot::$slot, names));
                Ok(())
            },
            print: |a, _op, p| {
                if let Some(v) = &a.$field {
                    p.key($key);
                    p.comp_list(v);
                }
            },
        }
    };
}

/// Every typed attribute, in canonical print order.
pub static ATTRS: &[AttrDef] = &[
    opt!(
        "kind",
        fusion_kind,
        |c| c
            .ident("a fusion kind (kLoop, kInput, kOutput, kCustom)")?
            .to_string(),
        |p, v| p.word(v)
    ),
    int!("channel_id", channel_id),
    opt!(
        "replica_groups",
        replica_groups,
        |c| c.replica_groups()?,
        |p, v| p.replica_groups(v)
    ),
    opt!(
        "source_target_pairs",
        source_target_pairs,
        |c| c.pairs()?,
        |p, v| p.pairs(v)
    ),
    string!("custom_call_target", custom_call_target),
    opt!("slice", slice, |c| c.slice_dims()?, |p, v| p.slice(v)),
    list!("dimensions", dimensions),
    int!("iota_dimension", iota_dimension),
    int!("index", index),
    list!("dynamic_slice_sizes", dynamic_slice_sizes),
    opt!("padding", padding, |c| c.padding_dims(true)?, |p, v| p
        .padding(v)),
    opt!("window", window, |c| c.window()?, |p, v| p.window(v)),
    opt!("dim_labels", dim_labels, |c| c.dim_labels()?, |p, v| p
        .dim_labels(v)),
    int!("feature_group_count", feature_group_count),
    int!("batch_group_count", batch_group_count),
    list!("offset_dims", offset_dims),
    list!("collapsed_slice_dims", collapsed_slice_dims),
    list!("start_index_map", start_index_map),
    list!("operand_batching_dims", operand_batching_dims),
    list!("start_indices_batching_dims", start_indices_batching_dims),
    list!("update_window_dims", update_window_dims),
    list!("inserted_window_dims", inserted_window_dims),
    list!("scatter_dims_to_operand_dims", scatter_dims_to_operand_dims),
    list!("input_batching_dims", input_batching_dims),
    list!(
        "scatter_indices_batching_dims",
        scatter_indices_batching_dims
    ),
    int!("index_vector_dim", index_vector_dim),
    list!("slice_sizes", slice_sizes),
    boolean!("indices_are_sorted", indices_are_sorted),
    boolean!("unique_indices", unique_indices),
    list!("lhs_batch_dims", lhs_batch_dims),
    list!("lhs_contracting_dims", lhs_contracting_dims),
    list!("rhs_batch_dims", rhs_batch_dims),
    list!("rhs_contracting_dims", rhs_contracting_dims),
    boolean!("use_global_device_ids", use_global_device_ids),
    boolean!("constrain_layout", constrain_layout),
    enumeration!(
        "direction",
        direction,
        ComparisonDirection,
        "comparison direction"
    ),
    enumeration!("type", comparison_type, ComparisonType, "comparison type"),
    boolean!("is_stable", is_stable),
    int!("k", k),
    boolean!("largest", largest),
    int!("exponent_bits", exponent_bits),
    int!("mantissa_bits", mantissa_bits),
    enumeration!("fft_type", fft_type, FftType, "fft type"),
    list!("fft_length", fft_length),
    enumeration!(
        "distribution",
        distribution,
        RngDistribution,
        "rng distribution"
    ),
    opt!("epsilon", epsilon, |c| c.float_attr()?, |p, v| p.float(*v)),
    int!("feature_index", feature_index),
    AttrDef {
        key: "triangular_solve_options",
        parse: |c, ctx| {
            ctx.attrs.triangular_solve_options = Some(c.triangular_solve_options()?);
            Ok(())
        },
        print: |a, _op, p| {
            if let Some(o) = &a.triangular_solve_options {
                p.triangular_solve_options(o);
            }
        },
    },
    AttrDef {
        key: "left_side",
        parse: |c, ctx| {
            ctx.tri().left_side = c.boolean()?;
            Ok(())
        },
        print: |_, _, _| {},
    },
    AttrDef {
        key: "lower",
        parse: |c, ctx| {
            let v = c.boolean()?;
            if ctx.opcode == Opcode::TriangularSolve {
                ctx.tri().lower = v;
            } else {
                ctx.attrs.lower = Some(v);
            }
            Ok(())
        },
        print: |a, _op, p| {
            if let Some(v) = a.lower {
                p.key("lower");
                p.boolean(v);
            }
        },
    },
    AttrDef {
        key: "unit_diagonal",
        parse: |c, ctx| {
            ctx.tri().unit_diagonal = c.boolean()?;
            Ok(())
        },
        print: |_, _, _| {},
    },
    AttrDef {
        key: "transpose_a",
        parse: |c, ctx| {
            ctx.tri().transpose_a = c.transpose_kind()?;
            Ok(())
        },
        print: |_, _, _| {},
    },
    opt!(
        "operand_precision",
        operand_precision,
        |c| c.precisions()?,
        |p, v| p.precisions(v)
    ),
    AttrDef {
        key: "precision_config",
        parse: |c, ctx| {
            ctx.attrs.operand_precision = Some(c.precisions()?);
            Ok(())
        },
        print: |_, _, _| {},
    },
    AttrDef {
        key: "algorithm",
        parse: |c, ctx| {
            if ctx.opcode == Opcode::RngBitGenerator {
                let v = c.enum_ident(
                    "rng algorithm",
                    &RngAlgorithm::ALL,
                    RngAlgorithm::from_name,
                    |e| e.name(),
                )?;
                ctx.attrs.rng_algorithm = Some(v);
            } else {
                ctx.attrs.dot_algorithm = Some(c.ident("a dot algorithm")?.to_string());
            }
            Ok(())
        },
        print: |a, _op, p| {
            if let Some(v) = a.rng_algorithm {
                p.key("algorithm");
                p.word(v.name());
            }
            if let Some(v) = &a.dot_algorithm {
                p.key("algorithm");
                p.word(v);
            }
        },
    },
    boolean!("custom_call_has_side_effect", custom_call_has_side_effect),
    opt!(
        "api_version",
        api_version,
        |c| c.ident("an API version")?.to_string(),
        |p, v| p.word(v)
    ),
    string!("opaque", opaque),
    opt!("outfeed_shape", outfeed_shape, |c| c.shape()?, |p, v| p
        .shape(v)),
    string!("infeed_config", infeed_config),
    string!("outfeed_config", outfeed_config),
    boolean!("is_host_transfer", is_host_transfer),
    comp!("to_apply", to_apply, ToApply),
    comp!("calls", calls, Calls),
    comp!("condition", condition, Condition),
    comp!("body", body, Body),
    comp!("true_computation", true_computation, TrueComputation),
    comp!("false_computation", false_computation, FalseComputation),
    comp!(
        "branch_computations",
        branch_computations,
        BranchComputations,
        list
    ),
    comp!("select", select, Select),
    comp!("scatter", scatter, Scatter),
    comp!(
        "called_computations",
        called_computations,
        CalledComputations,
        list
    ),
    boolean!("is_composite", is_composite),
    AttrDef {
        key: "composite.name",
        parse: |c, ctx| {
            ctx.attrs.composite_name = Some(c.string("a quoted composite name")?);
            Ok(())
        },
        print: |a, _op, p| {
            if frontend_has_composite(a) {
                return;
            }
            if let Some(v) = &a.composite_name {
                p.key("composite.name");
                p.string(v);
            }
            if let Some(v) = &a.composite_attributes {
                p.key("composite.attributes");
                p.word(v);
            }
            if let Some(v) = a.composite_version {
                p.key("composite.version");
                p.int(v);
            }
        },
    },
    AttrDef {
        key: "composite.attributes",
        parse: |c, ctx| {
            ctx.attrs.composite_attributes = Some(c.raw_value("composite attributes")?.to_string());
            Ok(())
        },
        print: |_, _, _| {},
    },
    AttrDef {
        key: "composite.version",
        parse: |c, ctx| {
            c.skip_ws()?;
            let v = if c.peek()? == Some(b'"') {
                let at = c.pos;
                let s = c.string("a composite version")?;
                match s.parse() {
                    Ok(v) => v,
                    Err(_) => {
                        return c.err_at(at, format!("composite.version '{s}' is not an integer"))
                    }
                }
            } else {
                c.int("a composite version")?
            };
            ctx.attrs.composite_version = Some(v);
            Ok(())
        },
        print: |_, _, _| {},
    },
    AttrDef {
        key: "control-predecessors",
        parse: |c, ctx| {
            ctx.preds = c.name_list("instruction")?;
            Ok(())
        },
        print: |a, _op, p| {
            if !a.control_predecessors.is_empty() {
                p.key("control-predecessors");
                p.inst_list(&a.control_predecessors);
            }
        },
    },
];

/// The table row for `key`.
pub fn lookup(key: &str) -> Option<&'static AttrDef> {
    ATTRS.iter().find(|d| d.key == key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_and_disjoint_from_verbatim_keys() {
        let mut seen = std::collections::BTreeSet::new();
        for d in ATTRS {
            assert!(seen.insert(d.key), "duplicate key {}", d.key);
            assert!(
                !VERBATIM_KEYS.contains(&d.key),
                "{} is both typed and verbatim",
                d.key
            );
        }
    }

    #[test]
    fn dictionaries_split_on_top_level_commas() {
        let d = split_dict(
            r#"{composite.attributes={a = 2.0 : f64, b = 1},composite.name="my.comp",composite.version="0"}"#,
        );
        assert_eq!(d.len(), 3);
        assert_eq!(d[0], ("composite.attributes", "{a = 2.0 : f64, b = 1}"));
        let (n, a, v) = composite_from_frontend(r#"{composite.name="x,y",composite.version="3"}"#);
        assert_eq!((n.as_deref(), a, v), (Some("x,y"), None, Some(3)));
    }
}
