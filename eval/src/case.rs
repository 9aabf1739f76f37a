//! The conformance corpus format (`tests/conformance/README.md`): reading and writing literals
//! as JSON, loading a case folder, and the checks `exact`, `close`, `shape_only` and `stats`
//! with a "worst element" report.
//!
//! Literal JSON: `{"type": "f32", "dims": [2,3], "data": [...]}` flat row-major; floats are
//! numbers or the strings `"nan"`, `"inf"`, `"-inf"`; complex values `[re, im]`; pred
//! `true`/`false`; s64/u64 decimal strings (numbers are accepted too); a tuple is
//! `{"tuple": [...]}`; `data` may be `null` (a shape-only placeholder, read as zeros).
//! f32 values are read as f64 and rounded once, which gives the written f32 value exactly.

use arch::Budget;
use half::{bf16, f16};
use hlo::literal::{ArrayData, ArrayLiteral, Literal};
use hlo::types::ElementType;
use num_complex::{Complex32, Complex64};
use serde_json::{json, Value};
use std::cell::Cell;
use std::path::Path;

/// Largest rank of a literal in a case file.
const MAX_LITERAL_RANK: usize = 64;

/// Counts the bytes of the literals read so far against a [`Budget`] (checked before each
/// literal's data is allocated).
struct Reader {
    budget: Budget,
    used: Cell<u64>,
}

impl Reader {
    fn new(budget: Budget) -> Reader {
        Reader {
            budget,
            used: Cell::new(0),
        }
    }
    /// Reserves `n` elements of `ty` for the literal at `path`.
    fn reserve(&self, ty: ElementType, dims: &[u64], path: &str) -> Result<usize, CaseError> {
        let n = dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
        let bytes = n.and_then(|n| Budget::bytes(n, ty.byte_size().max(1) as u64));
        let total = bytes.and_then(|b| b.checked_add(self.used.get()));
        let dims_text = dims
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        self.budget
            .memory(
                format!("literal {ty}[{dims_text}] (with the literals before it)"),
                total,
            )
            .map_err(|e| ferr(path, e.to_string()))?;
        self.used.set(total.unwrap_or(u64::MAX));
        usize::try_from(n.unwrap_or(u64::MAX)).map_err(|_| ferr(path, "too large"))
    }
}

/// Errors reading a case.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CaseError {
    #[error("{path}: {msg}")]
    Format { path: String, msg: String },
    #[error("{0}")]
    Io(String),
    /// Text that is not JSON, at a line and column (1-based).
    #[error("{line}:{col}: error: {msg}")]
    Syntax {
        line: usize,
        col: usize,
        msg: String,
    },
}

fn ferr(path: &str, msg: impl Into<String>) -> CaseError {
    CaseError::Format {
        path: path.to_string(),
        msg: msg.into(),
    }
}

/// How a case's outputs are compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    Exact,
    Close,
    ShapeOnly,
    Stats,
}

/// `close` tolerance: `|actual - expected| <= atol + rtol * |expected|`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Tolerance {
    pub rtol: f64,
    pub atol: f64,
}

/// Expected sample statistics of a `stats` case.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stats {
    pub mean: f64,
    pub std: f64,
    pub mean_tol: f64,
    pub std_tol: f64,
    pub min: Option<f64>,
    pub max_exclusive: Option<f64>,
}

impl Case {
    /// Devices the case runs on: replicas × partitions (at least 1).
    pub fn devices(&self) -> usize {
        self.replicas.max(1).saturating_mul(self.partitions.max(1))
    }
}

/// One `(channel_id, value)` host transfer.
pub type HostTransfer = (i64, Literal);

/// A conformance case (`case.json`) with its module text.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    pub name: String,
    pub ops: Vec<String>,
    pub source: String,
    pub replicas: usize,
    /// Partitions per replica (`"partitions"`, SPMD cases; default 1). `inputs`, `outputs`
    /// and the host queues are listed per device, device = replica · partitions + partition.
    pub partitions: usize,
    pub inputs: Vec<Vec<Literal>>,
    pub outputs: Vec<Literal>,
    pub check: Check,
    pub tolerance: Tolerance,
    pub stats: Option<Stats>,
    pub notes: String,
    pub hlo_opcodes: Vec<String>,
    pub infeed: Vec<Vec<Literal>>,
    pub outfeed: Vec<Vec<Literal>>,
    pub host_send: Vec<Vec<HostTransfer>>,
    pub host_recv: Vec<Vec<HostTransfer>>,
    /// The module's HLO text (`module.hlo`).
    pub module_text: String,
}

fn num(v: &Value, path: &str) -> Result<f64, CaseError> {
    match v {
        Value::Number(n) => n.as_f64().ok_or_else(|| ferr(path, "bad number")),
        Value::String(s) => match s.as_str() {
            "nan" | "NaN" => Ok(f64::NAN),
            "-nan" => Ok(-f64::NAN),
            "inf" | "Infinity" => Ok(f64::INFINITY),
            "-inf" | "-Infinity" => Ok(f64::NEG_INFINITY),
            s => s
                .parse::<f64>()
                .map_err(|_| ferr(path, format!("bad float {s:?}"))),
        },
        _ => Err(ferr(path, format!("expected a number, got {v}"))),
    }
}

fn int(v: &Value, path: &str) -> Result<i128, CaseError> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .map(|x| x as i128)
            .or_else(|| n.as_u64().map(|x| x as i128))
            .ok_or_else(|| ferr(path, format!("bad integer {n}"))),
        Value::String(s) => s
            .parse::<i128>()
            .map_err(|_| ferr(path, format!("bad integer {s:?}"))),
        Value::Bool(b) => Ok(*b as i128),
        _ => Err(ferr(path, format!("expected an integer, got {v}"))),
    }
}

fn pair(v: &Value, path: &str) -> Result<(f64, f64), CaseError> {
    match v.as_array().map(|a| a.as_slice()) {
        Some([re, im]) => Ok((num(re, path)?, num(im, path)?)),
        _ => Err(ferr(path, format!("expected [re, im], got {v}"))),
    }
}

fn ranged<T: TryFrom<i128>>(x: i128, ty: ElementType, path: &str) -> Result<T, CaseError> {
    T::try_from(x).map_err(|_| ferr(path, format!("{x} does not fit {ty}")))
}

/// Reads a literal from its JSON form.
pub fn literal_from_json(v: &Value, path: &str) -> Result<Literal, CaseError> {
    literal_from_json_in(v, path, &Budget::default())
}

/// Reads a literal from its JSON form; its data must fit `budget.max_memory` (checked before
/// it is allocated).
pub fn literal_from_json_in(v: &Value, path: &str, budget: &Budget) -> Result<Literal, CaseError> {
    read_literal(v, path, &Reader::new(*budget))
}

fn read_literal(v: &Value, path: &str, r: &Reader) -> Result<Literal, CaseError> {
    if let Some(t) = v.get("tuple") {
        let items = t
            .as_array()
            .ok_or_else(|| ferr(path, "tuple is not a list"))?;
        return items
            .iter()
            .enumerate()
            .map(|(i, x)| read_literal(x, &format!("{path}.tuple[{i}]"), r))
            .collect::<Result<_, _>>()
            .map(Literal::Tuple);
    }
    if v.get("token").is_some() {
        return Ok(Literal::Token);
    }
    let ty_name = v
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| ferr(path, "missing type"))?;
    let ty = ElementType::from_name(ty_name)
        .ok_or_else(|| ferr(path, format!("unknown type {ty_name}")))?;
    let dims_v = v
        .get("dims")
        .and_then(Value::as_array)
        .ok_or_else(|| ferr(path, "missing dims"))?;
    if dims_v.len() > MAX_LITERAL_RANK {
        return Err(ferr(
            path,
            format!(
                "{} dims, more than the largest rank {}",
                dims_v.len(),
                MAX_LITERAL_RANK
            ),
        ));
    }
    let dims64: Vec<u64> = dims_v
        .iter()
        .map(|d| {
            d.as_u64()
                .ok_or_else(|| ferr(path, format!("bad dim {d}: expected an integer >= 0")))
        })
        .collect::<Result<_, _>>()?;
    let n = r.reserve(ty, &dims64, path)?;
    let dims: Vec<usize> = dims64.iter().map(|&d| d as usize).collect();
    let data = match v.get("data") {
        None | Some(Value::Null) => {
            if ty.is_carried_only() {
                return Err(ferr(
                    path,
                    format!("type {ty} is not supported in case files"),
                ));
            }
            ArrayData::zeros(ty, n)
        }
        Some(Value::Array(items)) => {
            if items.len() != n {
                return Err(ferr(
                    path,
                    format!("{} values for dims {dims:?}", items.len()),
                ));
            }
            data_from(ty, items, path)?
        }
        Some(other) => return Err(ferr(path, format!("data must be a list, got {other}"))),
    };
    Ok(Literal::Array(ArrayLiteral { dims, data }))
}

fn data_from(ty: ElementType, items: &[Value], path: &str) -> Result<ArrayData, CaseError> {
    use ElementType as T;
    let ints = || {
        items
            .iter()
            .map(|x| int(x, path))
            .collect::<Result<Vec<_>, _>>()
    };
    let floats = || {
        items
            .iter()
            .map(|x| num(x, path))
            .collect::<Result<Vec<_>, _>>()
    };
    let pairs = || {
        items
            .iter()
            .map(|x| pair(x, path))
            .collect::<Result<Vec<_>, _>>()
    };
    macro_rules! ints_as {
        ($v:ident, $t:ty) => {
            ArrayData::$v(
                ints()?
                    .into_iter()
                    .map(|x| ranged::<$t>(x, ty, path))
                    .collect::<Result<_, _>>()?,
            )
        };
    }
    Ok(match ty {
        T::Pred => ArrayData::Pred(
            items
                .iter()
                .map(|x| match x {
                    Value::Bool(b) => Ok(*b),
                    _ => int(x, path).map(|i| i != 0),
                })
                .collect::<Result<_, _>>()?,
        ),
        T::S8 => ints_as!(S8, i8),
        T::S16 => ints_as!(S16, i16),
        T::S32 => ints_as!(S32, i32),
        T::S64 => ints_as!(S64, i64),
        T::U8 => ints_as!(U8, u8),
        T::U16 => ints_as!(U16, u16),
        T::U32 => ints_as!(U32, u32),
        T::U64 => ints_as!(U64, u64),
        T::F16 => ArrayData::F16(floats()?.into_iter().map(f16::from_f64).collect()),
        T::BF16 => ArrayData::BF16(floats()?.into_iter().map(bf16::from_f64).collect()),
        T::F32 => ArrayData::F32(floats()?.into_iter().map(|x| x as f32).collect()),
        T::F64 => ArrayData::F64(floats()?),
        T::C64 => ArrayData::C64(
            pairs()?
                .into_iter()
                .map(|(r, i)| Complex32::new(r as f32, i as f32))
                .collect(),
        ),
        T::C128 => ArrayData::C128(
            pairs()?
                .into_iter()
                .map(|(r, i)| Complex64::new(r, i))
                .collect(),
        ),
        t => {
            return Err(ferr(
                path,
                format!("type {t} is not supported in case files"),
            ))
        }
    })
}

fn float_json(x: f64) -> Value {
    if x.is_nan() {
        json!("nan")
    } else if x.is_infinite() {
        json!(if x > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(x)
    }
}

fn f32_json(x: f32) -> Value {
    if !x.is_finite() {
        return float_json(x as f64);
    }
    // Shortest decimal that round-trips as f32.
    let s = format!("{x:?}");
    serde_json::from_str::<Value>(&s).unwrap_or_else(|_| json!(x as f64))
}

/// Writes a literal in its JSON form (f32 as the shortest round-tripping decimal).
pub fn literal_to_json(l: &Literal) -> Value {
    match l {
        Literal::Tuple(t) => json!({ "tuple": t.iter().map(literal_to_json).collect::<Vec<_>>() }),
        Literal::Token => json!({ "token": true }),
        Literal::Array(a) => {
            let data: Vec<Value> = match &a.data {
                ArrayData::Pred(v) => v.iter().map(|&b| json!(b)).collect(),
                ArrayData::S8(v) => v.iter().map(|&x| json!(x)).collect(),
                ArrayData::S16(v) => v.iter().map(|&x| json!(x)).collect(),
                ArrayData::S32(v) => v.iter().map(|&x| json!(x)).collect(),
                ArrayData::S64(v) => v.iter().map(|&x| json!(x.to_string())).collect(),
                ArrayData::U8(v) => v.iter().map(|&x| json!(x)).collect(),
                ArrayData::U16(v) => v.iter().map(|&x| json!(x)).collect(),
                ArrayData::U32(v) => v.iter().map(|&x| json!(x)).collect(),
                ArrayData::U64(v) => v.iter().map(|&x| json!(x.to_string())).collect(),
                ArrayData::F16(v) => v.iter().map(|x| float_json(x.to_f64())).collect(),
                ArrayData::BF16(v) => v.iter().map(|x| float_json(x.to_f64())).collect(),
                ArrayData::F32(v) => v.iter().map(|&x| f32_json(x)).collect(),
                ArrayData::F64(v) => v.iter().map(|&x| float_json(x)).collect(),
                ArrayData::C64(v) => v
                    .iter()
                    .map(|z| json!([f32_json(z.re), f32_json(z.im)]))
                    .collect(),
                ArrayData::C128(v) => v
                    .iter()
                    .map(|z| json!([float_json(z.re), float_json(z.im)]))
                    .collect(),
                ArrayData::Raw(_, v) => v.iter().map(|&x| json!(x)).collect(),
            };
            json!({ "type": a.element_type().name(), "dims": a.dims, "data": data })
        }
    }
}

fn lit_lists(v: Option<&Value>, path: &str, r: &Reader) -> Result<Vec<Vec<Literal>>, CaseError> {
    let Some(v) = v else { return Ok(Vec::new()) };
    let outer = v
        .as_array()
        .ok_or_else(|| ferr(path, "expected a list per replica"))?;
    outer
        .iter()
        .enumerate()
        .map(|(k, per)| {
            per.as_array()
                .ok_or_else(|| ferr(path, "expected a list of literals"))?
                .iter()
                .enumerate()
                .map(|(i, l)| read_literal(l, &format!("{path}[{k}][{i}]"), r))
                .collect()
        })
        .collect()
}

fn transfers(
    v: Option<&Value>,
    path: &str,
    rd: &Reader,
) -> Result<Vec<Vec<HostTransfer>>, CaseError> {
    let Some(v) = v else { return Ok(Vec::new()) };
    let outer = v
        .as_array()
        .ok_or_else(|| ferr(path, "expected a list per replica"))?;
    outer
        .iter()
        .enumerate()
        .map(|(r, per)| {
            per.as_array()
                .ok_or_else(|| ferr(path, "expected a list of transfers"))?
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let p = format!("{path}[{r}][{i}]");
                    let ch = t
                        .get("channel_id")
                        .and_then(Value::as_i64)
                        .ok_or_else(|| ferr(&p, "missing channel_id"))?;
                    let val = read_literal(
                        t.get("value").ok_or_else(|| ferr(&p, "missing value"))?,
                        &p,
                        rd,
                    )?;
                    Ok((ch, val))
                })
                .collect()
        })
        .collect()
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Parses `case.json` text (the module text is given separately).
pub fn parse_case(json_text: &str, module_text: String) -> Result<Case, CaseError> {
    parse_case_in(json_text, module_text, &Budget::default())
}

/// Parses `case.json` text; all its literals together must fit `budget.max_memory` (checked
/// before each is allocated).
pub fn parse_case_in(
    json_text: &str,
    module_text: String,
    budget: &Budget,
) -> Result<Case, CaseError> {
    let r = Reader::new(*budget);
    let v: Value = serde_json::from_str(json_text).map_err(|e| {
        let text = e.to_string();
        let msg = match text.rfind(" at line ") {
            Some(i) if e.line() > 0 => text[..i].to_string(),
            _ => text,
        };
        CaseError::Syntax {
            line: e.line(),
            col: e.column().max(1),
            msg,
        }
    })?;
    let check = match v.get("check").and_then(Value::as_str).unwrap_or("exact") {
        "exact" => Check::Exact,
        "close" => Check::Close,
        "shape_only" => Check::ShapeOnly,
        "stats" => Check::Stats,
        c => return Err(ferr("check", format!("unknown check {c:?}"))),
    };
    let tol = v.get("tolerance");
    let tf = |k: &str| {
        tol.and_then(|t| t.get(k))
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
    };
    let stats = v.get("stats").map(|s| {
        let g = |k: &str| s.get(k).and_then(Value::as_f64);
        Stats {
            mean: g("mean").unwrap_or(0.0),
            std: g("std").unwrap_or(0.0),
            mean_tol: g("mean_tol").unwrap_or(0.0),
            std_tol: g("std_tol").unwrap_or(0.0),
            min: g("min"),
            max_exclusive: g("max_exclusive"),
        }
    });
    let outputs_v = v
        .get("outputs")
        .and_then(Value::as_array)
        .ok_or_else(|| ferr("outputs", "missing outputs"))?;
    let outputs = outputs_v
        .iter()
        .enumerate()
        .map(|(i, o)| read_literal(o, &format!("outputs[{i}]"), &r))
        .collect::<Result<_, _>>()?;
    Ok(Case {
        name: v
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        ops: strings(v.get("ops")),
        source: v
            .get("source")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        replicas: v.get("replicas").and_then(Value::as_u64).unwrap_or(1) as usize,
        partitions: v.get("partitions").and_then(Value::as_u64).unwrap_or(1) as usize,
        inputs: lit_lists(v.get("inputs"), "inputs", &r)?,
        outputs,
        check,
        tolerance: Tolerance {
            rtol: tf("rtol"),
            atol: tf("atol"),
        },
        stats,
        notes: v
            .get("notes")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        hlo_opcodes: strings(v.get("hlo_opcodes")),
        infeed: lit_lists(v.get("infeed"), "infeed", &r)?,
        outfeed: lit_lists(v.get("outfeed"), "outfeed", &r)?,
        host_send: transfers(v.get("host_send"), "host_send", &r)?,
        host_recv: transfers(v.get("host_recv"), "host_recv", &r)?,
        module_text,
    })
}

/// Loads a case folder (`module.hlo` + `case.json`).
pub fn load_case(dir: &Path) -> Result<Case, CaseError> {
    load_case_in(dir, &Budget::default())
}

/// Loads a case folder; both files and the case's literals must fit `budget.max_memory`
/// (files are measured before they are read).
pub fn load_case_in(dir: &Path, budget: &Budget) -> Result<Case, CaseError> {
    let read = |f: &str| {
        let p = dir.join(f);
        let io = |e: String| CaseError::Io(format!("{}: {e}", p.display()));
        let len = std::fs::metadata(&p).map_err(|e| io(e.to_string()))?.len();
        budget
            .memory(format_args!("reading {}", p.display()), Some(len))
            .map_err(|e| io(e.to_string()))?;
        let bytes = std::fs::read(&p).map_err(|e| io(e.to_string()))?;
        String::from_utf8(bytes).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            let before = &e.as_bytes()[..at];
            let line = 1 + before.iter().filter(|&&c| c == b'\n').count();
            let start = before
                .iter()
                .rposition(|&c| c == b'\n')
                .map_or(0, |i| i + 1);
            let col = 1 + String::from_utf8_lossy(&before[start..]).chars().count();
            CaseError::Io(format!(
                "{}:{line}:{col}: error: invalid UTF-8",
                p.display()
            ))
        })
    };
    let module = read("module.hlo")?;
    parse_case_in(&read("case.json")?, module, budget)
}

/// Case folders (those with a `case.json`) under `root`, sorted by name.
pub fn case_dirs(root: &Path) -> Result<Vec<std::path::PathBuf>, CaseError> {
    let rd =
        std::fs::read_dir(root).map_err(|e| CaseError::Io(format!("{}: {e}", root.display())))?;
    let mut v: Vec<_> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("case.json").is_file())
        .collect();
    v.sort();
    Ok(v)
}

/// The element where two values differ most.
#[derive(Clone, Debug, PartialEq)]
pub struct Worst {
    pub index: Vec<usize>,
    pub expected: String,
    pub actual: String,
    pub abs_err: f64,
    pub rel_err: f64,
}

/// Why a value does not match its expectation.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    /// Where in the value (`""` for the root, `{1}` for tuple element 1, ...).
    pub path: String,
    pub message: String,
    /// Number of mismatching elements (0 for shape or statistics mismatches).
    pub count: usize,
    pub worst: Option<Worst>,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.path.is_empty() {
            write!(f, "at {}: ", self.path)?;
        }
        f.write_str(&self.message)?;
        if let Some(w) = &self.worst {
            write!(
                f,
                "; worst at {:?}: expected {}, actual {} (abs err {:.3e}, rel err {:.3e})",
                w.index, w.expected, w.actual, w.abs_err, w.rel_err
            )?;
        }
        Ok(())
    }
}

fn unflatten(mut i: usize, dims: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; dims.len()];
    for d in (0..dims.len()).rev() {
        if dims[d] > 0 {
            idx[d] = i % dims[d];
            i /= dims[d];
        }
    }
    idx
}

/// Real components of float or complex data (complex: re, im interleaved), as f64.
fn components(d: &ArrayData) -> Option<(Vec<f64>, usize)> {
    Some(match d {
        ArrayData::F16(v) => (v.iter().map(|x| x.to_f64()).collect(), 1),
        ArrayData::BF16(v) => (v.iter().map(|x| x.to_f64()).collect(), 1),
        ArrayData::F32(v) => (v.iter().map(|&x| x as f64).collect(), 1),
        ArrayData::F64(v) => (v.clone(), 1),
        ArrayData::C64(v) => (
            v.iter().flat_map(|z| [z.re as f64, z.im as f64]).collect(),
            2,
        ),
        ArrayData::C128(v) => (v.iter().flat_map(|z| [z.re, z.im]).collect(), 2),
        _ => return None,
    })
}

fn show(d: &ArrayData, i: usize) -> String {
    match d {
        ArrayData::C64(v) => format!("({}, {})", v[i].re, v[i].im),
        ArrayData::C128(v) => format!("({}, {})", v[i].re, v[i].im),
        ArrayData::F16(v) => format!("{}", v[i]),
        ArrayData::BF16(v) => format!("{}", v[i]),
        ArrayData::F32(v) => format!("{:?}", v[i]),
        ArrayData::F64(v) => format!("{:?}", v[i]),
        _ => literal_to_json(&Literal::Array(ArrayLiteral {
            dims: vec![],
            data: crate::util::take(d, &[i]),
        }))["data"][0]
            .to_string(),
    }
}

fn check_array(
    check: Check,
    tol: Tolerance,
    stats: Option<&Stats>,
    e: &ArrayLiteral,
    a: &ArrayLiteral,
    path: &str,
) -> Result<(), Box<Mismatch>> {
    let mm = |message: String| {
        Box::new(Mismatch {
            path: path.to_string(),
            message,
            count: 0,
            worst: None,
        })
    };
    if e.element_type() != a.element_type() || e.dims != a.dims {
        return Err(mm(format!("expected {}, got {}", e.shape(), a.shape())));
    }
    match check {
        Check::ShapeOnly => return Ok(()),
        Check::Stats => return check_stats(stats, a).map_err(mm),
        Check::Exact | Check::Close => {}
    }
    let (tol_r, tol_a) = if check == Check::Exact {
        (0.0, 0.0)
    } else {
        (tol.rtol, tol.atol)
    };
    let mut count = 0usize;
    let mut worst: Option<(f64, usize, f64, f64)> = None; // (score, element, abs, rel)
    if let (Some((ev, w)), Some((av, _))) = (components(&e.data), components(&a.data)) {
        for (k, (&x, &y)) in ev.iter().zip(&av).enumerate() {
            let ok = if x.is_nan() || y.is_nan() {
                x.is_nan() && y.is_nan()
            } else if x.is_infinite() || y.is_infinite() {
                x == y
            } else {
                (y - x).abs() <= tol_a + tol_r * x.abs()
            };
            if !ok {
                count += 1;
                let abs = if x.is_finite() && y.is_finite() {
                    (y - x).abs()
                } else {
                    f64::INFINITY
                };
                let rel = if x != 0.0 {
                    abs / x.abs()
                } else {
                    f64::INFINITY
                };
                let score = if abs.is_finite() { abs } else { f64::MAX };
                if worst.is_none_or(|w| score > w.0) {
                    worst = Some((score, k / w, abs, rel));
                }
            }
        }
    } else {
        for i in 0..e.data.len() {
            if e.data.bits_at(i) != a.data.bits_at(i) {
                count += 1;
                if worst.is_none() {
                    let (x, y) = (e.data.bits_at(i) as f64, a.data.bits_at(i) as f64);
                    worst = Some((0.0, i, (y - x).abs(), f64::NAN));
                }
            }
        }
    }
    match worst {
        None => Ok(()),
        Some((_, i, abs, rel)) => Err(Box::new(Mismatch {
            path: path.to_string(),
            message: format!("{count} of {} elements differ", e.data.len()),
            count,
            worst: Some(Worst {
                index: unflatten(i, &e.dims),
                expected: show(&e.data, i),
                actual: show(&a.data, i),
                abs_err: abs,
                rel_err: rel,
            }),
        })),
    }
}

/// The values a stats check looks at: float (and complex) components, or integers as f64
/// (an integer `rng` is checked by range, mean and std like a float one).
fn stat_values(d: &ArrayData) -> Option<Vec<f64>> {
    if let Some((v, _)) = components(d) {
        return Some(v);
    }
    let t = d.element_type();
    if !t.is_integer() || t.is_carried_only() {
        return None;
    }
    let sh = 128 - t.bits();
    Some(
        (0..d.len())
            .map(|i| {
                let b = d.bits_at(i);
                if t.is_signed_int() {
                    (((b << sh) as i128) >> sh) as f64
                } else {
                    b as f64
                }
            })
            .collect(),
    )
}

fn check_stats(stats: Option<&Stats>, a: &ArrayLiteral) -> Result<(), String> {
    let s = stats.ok_or("check \"stats\" without a \"stats\" field")?;
    let v = stat_values(&a.data).ok_or("stats check on a value that is not numeric")?;
    if v.is_empty() {
        return Err("stats check on an empty value".into());
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let std = (v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n).sqrt();
    if mean.is_nan() || (mean - s.mean).abs() > s.mean_tol {
        return Err(format!(
            "sample mean {mean:.5} not within {} of {}",
            s.mean_tol, s.mean
        ));
    }
    if std.is_nan() || (std - s.std).abs() > s.std_tol {
        return Err(format!(
            "sample std {std:.5} not within {} of {}",
            s.std_tol, s.std
        ));
    }
    if let Some(lo) = s.min {
        if let Some(x) = v.iter().find(|&&x| x.is_nan() || x < lo) {
            return Err(format!("value {x} below the minimum {lo}"));
        }
    }
    if let Some(hi) = s.max_exclusive {
        if let Some(x) = v.iter().find(|&&x| x.is_nan() || x >= hi) {
            return Err(format!("value {x} not below the exclusive maximum {hi}"));
        }
    }
    Ok(())
}

fn check_at(
    check: Check,
    tol: Tolerance,
    stats: Option<&Stats>,
    e: &Literal,
    a: &Literal,
    path: &str,
) -> Result<(), Box<Mismatch>> {
    match (e, a) {
        (Literal::Array(x), Literal::Array(y)) => check_array(check, tol, stats, x, y, path),
        (Literal::Tuple(x), Literal::Tuple(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                check_at(check, tol, stats, p, q, &format!("{path}{{{i}}}"))?;
            }
            Ok(())
        }
        (Literal::Token, Literal::Token) => Ok(()),
        _ => Err(Box::new(Mismatch {
            path: path.to_string(),
            message: format!("expected {}, got {}", e.shape(), a.shape()),
            count: 0,
            worst: None,
        })),
    }
}

/// Compares `actual` with `expected` under a case's check (see the corpus README).
pub fn check_value(
    check: Check,
    tol: Tolerance,
    stats: Option<&Stats>,
    expected: &Literal,
    actual: &Literal,
) -> Result<(), Box<Mismatch>> {
    check_at(check, tol, stats, expected, actual, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> Literal {
        literal_from_json(&serde_json::from_str(s).unwrap(), "t").unwrap()
    }

    #[test]
    fn json_round_trip() {
        for s in [
            r#"{"type":"f32","dims":[3],"data":[1.5,"nan","-inf"]}"#,
            r#"{"type":"s64","dims":[2],"data":["-9223372036854775808","7"]}"#,
            r#"{"type":"c64","dims":[1],"data":[[1.0,-2.5]]}"#,
            r#"{"tuple":[{"type":"pred","dims":[],"data":[true]},{"type":"bf16","dims":[1],"data":[0.15625]}]}"#,
        ] {
            let l = lit(s);
            assert_eq!(
                literal_from_json(&literal_to_json(&l), "t").unwrap(),
                l,
                "{s}"
            );
        }
        assert_eq!(
            literal_to_json(&Literal::scalar_f32(0.1))["data"][0].to_string(),
            "0.1"
        );
    }

    #[test]
    fn stats_check_accepts_integers() {
        // An integer rng is checked by range, mean and std (values 0..=9, uniform).
        let a = lit(r#"{"type":"s32","dims":[10],"data":[0,1,2,3,4,5,6,7,8,9]}"#);
        let st = Stats {
            mean: 4.5,
            std: 2.87,
            mean_tol: 0.01,
            std_tol: 0.01,
            min: Some(0.0),
            max_exclusive: Some(10.0),
        };
        let tol = Tolerance::default();
        assert!(check_value(Check::Stats, tol, Some(&st), &a, &a).is_ok());
        let lo = Stats {
            min: Some(1.0),
            ..st
        };
        let e = check_value(Check::Stats, tol, Some(&lo), &a, &a).unwrap_err();
        assert!(e.message.contains("below the minimum"), "{}", e.message);
        let u = lit(r#"{"type":"u8","dims":[2],"data":[250,252]}"#);
        let su = Stats {
            mean: 251.0,
            std: 1.0,
            mean_tol: 1e-9,
            std_tol: 1e-9,
            min: None,
            max_exclusive: None,
        };
        assert!(check_value(Check::Stats, tol, Some(&su), &u, &u).is_ok());
        let p = lit(r#"{"type":"pred","dims":[1],"data":[true]}"#);
        assert!(check_value(Check::Stats, tol, Some(&su), &p, &p).is_err());
    }

    #[test]
    fn checks_and_worst_element() {
        let e = lit(r#"{"type":"f32","dims":[2,2],"data":[1.0,"nan",0.0,100.0]}"#);
        let a = lit(r#"{"type":"f32","dims":[2,2],"data":[1.0,"nan",-0.0,100.5]}"#);
        let tol = Tolerance {
            rtol: 1e-2,
            atol: 0.0,
        };
        assert!(check_value(Check::Close, tol, None, &e, &a).is_ok());
        let m = check_value(Check::Exact, tol, None, &e, &a).unwrap_err();
        let w = m.worst.unwrap();
        assert_eq!((w.index, m.count, w.abs_err), (vec![1, 1], 1, 0.5));
        let b = lit(r#"{"type":"s32","dims":[2],"data":[1,2]}"#);
        assert!(check_value(Check::ShapeOnly, tol, None, &b, &b).is_ok());
        assert!(check_value(Check::Exact, tol, None, &e, &b).is_err());
    }
}
