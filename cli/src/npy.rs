//! NumPy data for `run`/`eval`: `--inputs A.npy,B.npy,...` (one file per parameter, in order;
//! `--inputs` may also repeat)
//! or `--inputs ARGS.npz` (arrays named like the parameters — `x` for `x.1` too, HLO's
//! numbering left off — or `arr_0`, `arr_1`, ... by position, as `np.savez(f, *args)` names
//! them), and `--outputs OUT.npz` for the results.
//!
//! Element types: a parameter of type `f32`, `f64`, `f16`, `s8`..`s64`, `u8`..`u64` or `pred`
//! takes the NumPy array of exactly that type (`<f4`, `<f8`, `<f2`, `|i1`..`<i8`, `|u1`..`<u8`,
//! `|b1`; either byte order). NumPy has no bfloat16: a `bf16` parameter takes what
//! `ml_dtypes.bfloat16` arrays save as (`<V2`, the raw bits) or a `float32` array, rounded to
//! nearest even. Shapes must be the parameter's exactly (Fortran-order files are reordered).
//! Results are written as `np.savez` writes (stored, not compressed; `bf16` as `<V2`, which
//! `.view(ml_dtypes.bfloat16)` reads back); archive entries are `out` for an array result and
//! `out_0`, `out_1`, ... for a tuple's elements (`out_1_0` when nested), prefixed `replicaR_`
//! when the module runs on several devices.
//!
//! Invariant: every problem is a [`UserError`] naming the file, and the parameter where one is
//! concerned (exit 2); nothing here panics on a file's contents.

use crate::UserError;
use anyhow::Result;
use half::{bf16, f16};
use hlo::{ArrayData, ArrayLiteral, ElementType, Literal, Shape};
use npyz::{DType, NpyFile, TypeChar, WriterBuilder};
use std::io::Read;
use std::path::{Path, PathBuf};

fn user(msg: String) -> anyhow::Error {
    anyhow::Error::new(UserError(msg))
}

/// What `--inputs` names.
pub enum InputFiles<'a> {
    /// A case.json or case folder (the corpus format).
    Case(&'a Path),
    /// One `.npy` per parameter.
    Npy(&'a [PathBuf]),
    /// One `.npz` archive.
    Npz(&'a Path),
}

fn ext(p: &Path) -> Option<String> {
    p.extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
}

/// Sorts the `--inputs` paths into one of the accepted forms.
pub fn classify(paths: &[PathBuf]) -> Result<InputFiles<'_>> {
    let npy = paths
        .iter()
        .filter(|p| ext(p).as_deref() == Some("npy"))
        .count();
    match paths {
        [] => Err(user("--inputs: no file given".into())),
        [p] if ext(p).as_deref() == Some("npz") => Ok(InputFiles::Npz(p)),
        _ if npy == paths.len() => Ok(InputFiles::Npy(paths)),
        [p] => Ok(InputFiles::Case(p)),
        _ => Err(user(format!(
            "--inputs: {} files: give a case.json (or case folder), one .npz, or one .npy per parameter",
            paths.len()
        ))),
    }
}

/// `name` (parameter `i`, `ty[dims]`) for messages.
fn param_label(i: usize, name: &str, shape: &Shape) -> String {
    format!("parameter {i} `{name}` ({})", shape_text(shape))
}

fn shape_text(s: &Shape) -> String {
    match s {
        Shape::Array(a) => format!(
            "{}[{}]",
            a.ty.name(),
            a.dims
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ),
        Shape::Tuple(_) => "a tuple".into(),
        Shape::Token => "a token".into(),
    }
}

/// The entry computation's parameters: `(name, shape)` in parameter order.
pub fn parameters(module: &hlo::Module) -> Vec<(String, Shape)> {
    let entry = module.entry();
    let shapes = entry.program_shape().params;
    entry
        .parameters()
        .into_iter()
        .zip(shapes)
        .map(|(h, s)| (entry.insts[h].name.clone(), s))
        .collect()
}

/// One argument per parameter, read from the `.npy` files (in parameter order).
pub fn read_npy_args(files: &[PathBuf], module: &hlo::Module) -> Result<Vec<Literal>> {
    read_npy_params(files, &parameters(module))
}

/// One argument per parameter `(name, shape)`, read from the `.npy` files (in order).
pub fn read_npy_params(files: &[PathBuf], params: &[(String, Shape)]) -> Result<Vec<Literal>> {
    if files.len() != params.len() {
        return Err(user(format!(
            "--inputs: {} .npy file(s) for the module's {} parameter(s) ({})",
            files.len(),
            params.len(),
            params
                .iter()
                .map(|p| p.0.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    budget_check(params, &files[0])?;
    files
        .iter()
        .zip(params)
        .enumerate()
        .map(|(i, (f, (name, shape)))| {
            let r = std::fs::File::open(f)
                .map_err(|e| user(format!("{}: cannot read: {e}", f.display())))?;
            let what = format!("{} for {}", f.display(), param_label(i, name, shape));
            read_array(std::io::BufReader::new(r), shape, &what)
        })
        .collect()
}

/// One argument per parameter from an `.npz`: the array named like the parameter, else
/// `arr_I`; every array of the archive must be used.
pub fn read_npz_args(file: &Path, module: &hlo::Module) -> Result<Vec<Literal>> {
    read_npz_params(file, &parameters(module))
}

/// One argument per parameter `(name, shape)` from an `.npz` (see [`read_npz_args`]).
pub fn read_npz_params(file: &Path, params: &[(String, Shape)]) -> Result<Vec<Literal>> {
    budget_check(params, file)?;
    let f = std::fs::File::open(file)
        .map_err(|e| user(format!("{}: cannot read: {e}", file.display())))?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(f)).map_err(|e| {
        user(format!(
            "{}: not an .npz (zip) archive: {e}",
            file.display()
        ))
    })?;
    let names: Vec<String> = zip
        .file_names()
        .filter_map(|n| npyz::npz::array_name_from_file_name(n).map(str::to_string))
        .collect();
    let mut used = vec![false; names.len()];
    let mut args = Vec::new();
    // `x` also names parameter `x.1` (HLO numbers its names) when no other parameter is `x.N`.
    let stem = |n: &str| n.split('.').next().unwrap_or(n).to_string();
    for (i, (name, shape)) in params.iter().enumerate() {
        let mut keys = vec![name.clone()];
        let st = stem(name);
        if st != *name && !st.is_empty() && params.iter().filter(|p| stem(&p.0) == st).count() == 1
        {
            keys.push(st);
        }
        keys.push(format!("arr_{i}"));
        let Some(k) = keys
            .iter()
            .find_map(|key| names.iter().position(|n| n == key))
        else {
            let looked: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
            return Err(user(format!(
                "{}: no array for {} (looked for {}; the archive has: {})",
                file.display(),
                param_label(i, name, shape),
                looked.join(", "),
                if names.is_empty() {
                    "no arrays".to_string()
                } else {
                    names.join(", ")
                }
            )));
        };
        used[k] = true;
        let entry = zip
            .by_name(&npyz::npz::file_name_from_array_name(&names[k]))
            .map_err(|e| user(format!("{}: array `{}`: {e}", file.display(), names[k])))?;
        let what = format!(
            "{}: array `{}` for {}",
            file.display(),
            names[k],
            param_label(i, name, shape)
        );
        args.push(read_array(entry, shape, &what)?);
    }
    if let Some(k) = used.iter().position(|u| !u) {
        return Err(user(format!(
            "{}: array `{}` matches no parameter (parameters: {}; or arr_0..arr_{})",
            file.display(),
            names[k],
            params
                .iter()
                .map(|p| p.0.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            params.len().saturating_sub(1)
        )));
    }
    Ok(args)
}

/// The parameters' bytes against the memory budget (they are what the files may hold).
fn budget_check(params: &[(String, Shape)], file: &Path) -> Result<()> {
    let total = params
        .iter()
        .try_fold(0u64, |acc, p| acc.checked_add(p.1.byte_size()?));
    crate::bounded::budget()
        .memory(
            format_args!("{} parameter array(s) from NumPy files", params.len()),
            total,
        )
        .map_err(|e| crate::bounded::over(&file.display().to_string(), e))
}

/// Reads one array of `shape` from an `.npy` stream; `what` names it in errors.
fn read_array<R: Read>(r: R, shape: &Shape, what: &str) -> Result<Literal> {
    let Shape::Array(want) = shape else {
        return Err(user(format!(
            "{what}: tuple and token parameters cannot come from .npy files (use a case.json)"
        )));
    };
    let npy = NpyFile::new(r).map_err(|e| user(format!("{what}: not an .npy file: {e}")))?;
    let dims: Vec<u64> = want.dims.iter().map(|&d| d.max(0) as u64).collect();
    if npy.shape() != dims.as_slice() {
        return Err(user(format!(
            "{what}: the array has shape ({}), the parameter is {}",
            npy.shape()
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
                + if npy.shape().len() == 1 { "," } else { "" },
            shape_text(shape)
        )));
    }
    let DType::Plain(ts) = npy.dtype() else {
        return Err(user(format!(
            "{what}: a structured or array dtype ({}); the parameter is {}",
            npy.dtype().descr(),
            shape_text(shape)
        )));
    };
    let (tc, size) = (ts.type_char(), ts.size_field());
    let fortran = npy.order() == npyz::Order::Fortran;
    let udims: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
    let bad_type = || {
        user(format!(
            "{what}: dtype {ts} does not fit {}{}",
            want.ty.name(),
            match want.ty {
                ElementType::BF16 =>
                    " (give <V2 bits as ml_dtypes.bfloat16 saves them, or float32)",
                ElementType::F32 => " (float32: .astype(np.float32))",
                ElementType::Pred => " (bool)",
                _ => "",
            }
        ))
    };
    let io = |e: std::io::Error| user(format!("{what}: {e}"));
    macro_rules! read {
        ($t:ty) => {{
            let v: Vec<$t> = npy.into_vec::<$t>().map_err(io)?;
            if fortran {
                fortran_to_c(v, &udims)
            } else {
                v
            }
        }};
    }
    use ElementType as T;
    use TypeChar as C;
    let data = match (want.ty, tc, size) {
        (T::F32, C::Float, 4) => ArrayData::F32(read!(f32)),
        (T::F64, C::Float, 8) => ArrayData::F64(read!(f64)),
        (T::F16, C::Float, 2) => ArrayData::F16(read!(f16)),
        (T::BF16, C::Float, 4) => {
            ArrayData::BF16(read!(f32).into_iter().map(bf16::from_f32).collect())
        }
        (T::BF16, C::RawData, 2) => {
            let v: Vec<npyz::FixedSizeBytes<2>> = read!(npyz::FixedSizeBytes<2>);
            // `<V2` has no byte order of its own: ml_dtypes writes the machine's (little
            // endian on every platform it ships for).
            ArrayData::BF16(
                v.into_iter()
                    .map(|b| bf16::from_bits(u16::from_le_bytes(b.0)))
                    .collect(),
            )
        }
        (T::S8, C::Int, 1) => ArrayData::S8(read!(i8)),
        (T::S16, C::Int, 2) => ArrayData::S16(read!(i16)),
        (T::S32, C::Int, 4) => ArrayData::S32(read!(i32)),
        (T::S64, C::Int, 8) => ArrayData::S64(read!(i64)),
        (T::U8, C::Uint, 1) => ArrayData::U8(read!(u8)),
        (T::U16, C::Uint, 2) => ArrayData::U16(read!(u16)),
        (T::U32, C::Uint, 4) => ArrayData::U32(read!(u32)),
        (T::U64, C::Uint, 8) => ArrayData::U64(read!(u64)),
        (T::Pred, C::Bool, 1) => ArrayData::Pred(read!(bool)),
        (
            T::Pred
            | T::S8
            | T::S16
            | T::S32
            | T::S64
            | T::U8
            | T::U16
            | T::U32
            | T::U64
            | T::F16
            | T::BF16
            | T::F32
            | T::F64,
            _,
            _,
        ) => return Err(bad_type()),
        (t, _, _) => {
            return Err(user(format!(
                "{what}: {} parameters cannot come from .npy files (use a case.json)",
                t.name()
            )))
        }
    };
    Ok(Literal::Array(ArrayLiteral { dims: udims, data }))
}

/// A Fortran-order (first index fastest) buffer of `dims` in C order (last index fastest).
fn fortran_to_c<T: Copy>(v: Vec<T>, dims: &[usize]) -> Vec<T> {
    if dims.len() < 2 {
        return v;
    }
    let n = v.len();
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0usize; dims.len()];
    for _ in 0..n {
        // Fortran offset of the C-order index `idx`.
        let mut off = 0;
        let mut stride = 1;
        for (k, &d) in dims.iter().enumerate() {
            off += idx[k] * stride;
            stride *= d;
        }
        out.push(v[off]);
        for k in (0..dims.len()).rev() {
            idx[k] += 1;
            if idx[k] < dims[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    out
}

/// Writes the results (one per replica) to `path` as an `.npz` (see the module docs).
pub fn write_outputs(path: &Path, results: &[Literal]) -> Result<()> {
    let mut arrays: Vec<(String, &ArrayLiteral)> = Vec::new();
    for (r, l) in results.iter().enumerate() {
        let base = if results.len() > 1 {
            format!("replica{r}_out")
        } else {
            "out".to_string()
        };
        leaves(l, base, &mut arrays);
    }
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .last_modified_time(zip::DateTime::default())
        .large_file(true);
    let err = |e: String| user(format!("{}: {e}", path.display()));
    for (name, a) in arrays {
        zip.start_file(npyz::npz::file_name_from_array_name(&name), opts)
            .map_err(|e| err(e.to_string()))?;
        write_array(&mut zip, a).map_err(|e| err(format!("array `{name}`: {e}")))?;
    }
    let bytes = zip.finish().map_err(|e| err(e.to_string()))?.into_inner();
    std::fs::write(path, bytes).map_err(|e| err(format!("cannot write: {e}")))
}

fn leaves<'a>(l: &'a Literal, name: String, out: &mut Vec<(String, &'a ArrayLiteral)>) {
    match l {
        Literal::Array(a) => out.push((name, a)),
        Literal::Tuple(t) => {
            for (i, x) in t.iter().enumerate() {
                leaves(x, format!("{name}_{i}"), out);
            }
        }
        Literal::Token => {}
    }
}

fn write_array<W: std::io::Write>(w: &mut W, a: &ArrayLiteral) -> Result<(), String> {
    let shape: Vec<u64> = a.dims.iter().map(|&d| d as u64).collect();
    macro_rules! put {
        ($v:expr, $t:ty) => {{
            let mut wr = npyz::WriteOptions::<$t>::new()
                .default_dtype()
                .shape(&shape)
                .writer(&mut *w)
                .begin_nd()
                .map_err(|e| e.to_string())?;
            wr.extend($v.iter().copied()).map_err(|e| e.to_string())?;
            wr.finish().map_err(|e| e.to_string())?;
        }};
    }
    match &a.data {
        ArrayData::Pred(v) => put!(v, bool),
        ArrayData::S8(v) => put!(v, i8),
        ArrayData::S16(v) => put!(v, i16),
        ArrayData::S32(v) => put!(v, i32),
        ArrayData::S64(v) => put!(v, i64),
        ArrayData::U8(v) => put!(v, u8),
        ArrayData::U16(v) => put!(v, u16),
        ArrayData::U32(v) => put!(v, u32),
        ArrayData::U64(v) => put!(v, u64),
        ArrayData::F16(v) => put!(v, f16),
        ArrayData::F32(v) => put!(v, f32),
        ArrayData::F64(v) => put!(v, f64),
        ArrayData::BF16(v) => {
            let raw: Vec<npyz::FixedSizeBytes<2>> = v
                .iter()
                .map(|x| npyz::FixedSizeBytes(x.to_bits().to_le_bytes()))
                .collect();
            let dtype = DType::new_scalar("<V2".parse().expect("a valid type string"));
            let mut wr = npyz::WriteOptions::<npyz::FixedSizeBytes<2>>::new()
                .dtype(dtype)
                .shape(&shape)
                .writer(&mut *w)
                .begin_nd()
                .map_err(|e| e.to_string())?;
            wr.extend(raw).map_err(|e| e.to_string())?;
            wr.finish().map_err(|e| e.to_string())?;
        }
        ArrayData::C64(_) | ArrayData::C128(_) | ArrayData::Raw(..) => {
            return Err("complex and sub-byte/fp8 results cannot be written to .npz yet".into())
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fortran_order_is_transposed_to_c_order() {
        // The 2x3 matrix [[0,1,2],[3,4,5]] in Fortran order is 0,3,1,4,2,5.
        assert_eq!(
            fortran_to_c(vec![0, 3, 1, 4, 2, 5], &[2, 3]),
            vec![0, 1, 2, 3, 4, 5]
        );
    }
}
