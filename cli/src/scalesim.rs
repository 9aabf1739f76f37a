//! `systole run --scalesim-topology LAYERS.csv --arch A [-o OUT.csv]`: every layer of a
//! SCALE-Sim topology built as an HLO module (a convolution, or a dot for the GEMM format),
//! compiled and simulated timing-only, beside SCALE-Sim's weight-stationary cycle count for one
//! R×C array, `⌈K/R⌉·⌈N/C⌉·(2R + C + M − 2) − 1`.
//!
//! Topology formats (SCALE-Sim's `topologies/`): convolutions, with the header
//! `Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter,
//! Strides,` and one row per layer (an optional ninth number is the column stride; further
//! columns are ignored); GEMMs, with the header `Layer, M, N, K,`. A convolution has SCALE-Sim's
//! output size `Ho = ⌈(H − Fh + S)/S⌉` (no padding, except on the high edge when `H − Fh` is
//! not a multiple of `S`, where SCALE-Sim counts a last partial window); as a GEMM (im2col) it is
//! `M = Ho·Wo`, `K = Fh·Fw·C`, `N = filters`. A GEMM row `M, N, K` is `[M,K]·[K,N]`. Operands
//! are the MXU's input type (bf16 → f32 results, or int8 → s32).
//!
//! Invariant: a malformed file is an error at FILE:LINE (exit 2); a layer that does not compile
//! or run is a row with its error, and the other layers go on.

use crate::cmd_run::TargetArgs;
use crate::{Outcome, UserError};
use anyhow::Result;
use std::path::Path;

fn user(msg: String) -> anyhow::Error {
    anyhow::Error::new(UserError(msg))
}

/// One layer of a topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layer {
    pub name: String,
    /// Line in the file (for messages).
    pub line: usize,
    pub shape: LayerShape,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayerShape {
    Conv {
        h: u64,
        w: u64,
        fh: u64,
        fw: u64,
        c: u64,
        n: u64,
        sh: u64,
        sw: u64,
    },
    Gemm {
        m: u64,
        n: u64,
        k: u64,
    },
}

impl LayerShape {
    /// Output height and width of a convolution.
    fn out_hw(&self) -> (u64, u64) {
        match *self {
            LayerShape::Conv {
                h,
                w,
                fh,
                fw,
                sh,
                sw,
                ..
            } => ((h - fh + sh).div_ceil(sh), (w - fw + sw).div_ceil(sw)),
            LayerShape::Gemm { m, .. } => (m, 1),
        }
    }

    /// `(M, K, N)` of the layer as a GEMM.
    pub fn mkn(&self) -> (u64, u64, u64) {
        match *self {
            LayerShape::Conv { fh, fw, c, n, .. } => {
                let (ho, wo) = self.out_hw();
                (ho * wo, fh * fw * c, n)
            }
            LayerShape::Gemm { m, n, k } => (m, k, n),
        }
    }
}

/// SCALE-Sim's weight-stationary cycles for one `r`×`c` array:
/// `⌈K/R⌉·⌈N/C⌉·(2R + C + M − 2) − 1`.
pub fn ws_fold_cycles(m: u64, k: u64, n: u64, r: u64, c: u64) -> u64 {
    let folds = k.div_ceil(r) * n.div_ceil(c);
    (folds * (2 * r + c + m - 2)).saturating_sub(1)
}

/// Parses a topology file (either format).
pub fn parse(path: &Path, text: &str) -> Result<Vec<Layer>> {
    let file = path.display();
    let mut lines = text.lines().enumerate();
    let header = loop {
        match lines.next() {
            Some((_, l)) if l.trim().is_empty() => continue,
            Some((i, l)) => break (i + 1, l),
            None => return Err(user(format!("{file}: empty file: no header"))),
        }
    };
    let cols: Vec<String> = header
        .1
        .split(',')
        .map(|f| f.trim().to_ascii_lowercase())
        .collect();
    let gemm = cols.len() >= 4 && cols[1] == "m" && cols[2] == "n" && cols[3] == "k";
    let conv = cols.len() >= 8 && cols[1].contains("ifmap");
    if !gemm && !conv {
        return Err(user(format!(
            "{file}:{}: not a SCALE-Sim topology header: expected `Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,` or `Layer, M, N, K,`",
            header.0
        )));
    }
    let mut layers = Vec::new();
    for (i, l) in lines {
        let line = i + 1;
        let f: Vec<&str> = l.split(',').map(str::trim).collect();
        if f.iter().all(|x| x.is_empty()) {
            continue;
        }
        let name = f[0].to_string();
        let need = if gemm { 4 } else { 8 };
        let num = |j: usize, what: &str| -> Result<u64> {
            let s = f.get(j).copied().unwrap_or("");
            match s.parse::<u64>() {
                Ok(v) if v >= 1 => Ok(v),
                _ => Err(user(format!(
                    "{file}:{line}: layer `{name}`: {what} is `{s}`, expected a whole number >= 1{}",
                    if f.len() < need {
                        format!(" (the row has {} fields, a layer needs {need})", f.len())
                    } else {
                        String::new()
                    }
                ))),
            }
        };
        let shape = if gemm {
            LayerShape::Gemm {
                m: num(1, "M")?,
                n: num(2, "N")?,
                k: num(3, "K")?,
            }
        } else {
            if name.contains("DP") {
                return Err(user(format!(
                    "{file}:{line}: layer `{name}`: depthwise layers (DP in the name, which SCALE-Sim runs channel by channel) are not supported"
                )));
            }
            let sh = num(7, "Strides")?;
            let sw = match f.get(8) {
                Some(s) if !s.is_empty() => num(8, "the column stride")?,
                _ => sh,
            };
            let s = LayerShape::Conv {
                h: num(1, "IFMAP Height")?,
                w: num(2, "IFMAP Width")?,
                fh: num(3, "Filter Height")?,
                fw: num(4, "Filter Width")?,
                c: num(5, "Channels")?,
                n: num(6, "Num Filter")?,
                sh,
                sw,
            };
            if let LayerShape::Conv { h, w, fh, fw, .. } = s {
                if fh > h || fw > w {
                    return Err(user(format!(
                        "{file}:{line}: layer `{name}`: the {fh}x{fw} filter is larger than the {h}x{w} input"
                    )));
                }
            }
            s
        };
        layers.push(Layer { name, line, shape });
    }
    if layers.is_empty() {
        return Err(user(format!("{file}: no layers after the header")));
    }
    Ok(layers)
}

/// The layer as HLO text: operands of the MXU's input type.
pub fn layer_hlo(l: &Layer, dtype: arch::MxuDtype) -> String {
    let (t_in, t_out) = match dtype {
        arch::MxuDtype::Bf16 => ("bf16", "f32"),
        arch::MxuDtype::Int8 => ("s8", "s32"),
    };
    let body = match l.shape {
        LayerShape::Conv {
            h,
            w,
            fh,
            fw,
            c,
            n,
            sh,
            sw,
        } => {
            let (ho, wo) = l.shape.out_hw();
            // SCALE-Sim's ⌈(H − Fh + S)/S⌉ counts a last, partial window where (H − Fh) is not
            // a multiple of S: padding the high edge gives the HLO convolution that many.
            let (ph, pw) = ((ho - 1) * sh + fh - h, (wo - 1) * sw + fw - w);
            let pad = if ph > 0 || pw > 0 {
                format!(" pad=0_{ph}x0_{pw}")
            } else {
                String::new()
            };
            format!(
                "  x = {t_in}[1,{h},{w},{c}]{{3,2,1,0}} parameter(0)\n  \
                 k = {t_in}[{fh},{fw},{c},{n}]{{3,2,1,0}} parameter(1)\n  \
                 ROOT y = {t_out}[1,{ho},{wo},{n}]{{3,2,1,0}} convolution(x, k), window={{size={fh}x{fw} stride={sh}x{sw}{pad}}}, dim_labels=b01f_01io->b01f\n"
            )
        }
        LayerShape::Gemm { m, n, k } => format!(
            "  a = {t_in}[{m},{k}]{{1,0}} parameter(0)\n  \
             b = {t_in}[{k},{n}]{{1,0}} parameter(1)\n  \
             ROOT d = {t_out}[{m},{n}]{{1,0}} dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n"
        ),
    };
    format!("HloModule scalesim_layer\n\nENTRY main {{\n{body}}}\n")
}

/// One layer's outcome.
struct Row {
    layer: Layer,
    formula: u64,
    result: Result<u64, String>,
}

/// Compiles and simulates one layer timing-only; its cycles.
fn simulate(t: &TargetArgs, arch: &arch::ArchConfig, l: &Layer) -> Result<u64, String> {
    let text = layer_hlo(l, arch.mxu.dtype);
    let module = hlo::parse(&text).map_err(|e| e.render("<layer>", &text))?;
    let module = hlo::verified(module).map_err(|e| e.render("<layer>", &text))?;
    let opts = compiler::CompileOptions {
        f32_dot_passes: t.f32_dot_passes,
        ..compiler::CompileOptions::default()
    };
    let c = compiler::compile(&module, arch, &opts).map_err(|e| e.render("<layer>"))?;
    let ex = crate::cmd_run::execute_batch(&c, arch, &[], false)?;
    Ok(ex.run.cycles)
}

fn kind(l: &Layer) -> &'static str {
    match l.shape {
        LayerShape::Conv { .. } => "conv",
        LayerShape::Gemm { .. } => "gemm",
    }
}

/// Quotes a CSV field if it needs it.
fn csv(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// `systole run --scalesim-topology`.
pub fn run(t: &TargetArgs, topo: &Path, out: Option<&Path>) -> Result<Outcome> {
    if t.file.is_some() {
        return Err(user(
            "--scalesim-topology replaces FILE.hlo: give one or the other".into(),
        ));
    }
    if let Some(o) = out {
        crate::bounded::check_output(o)?;
    }
    let text = crate::cmd_hlo::read_source(topo)?;
    let layers = parse(topo, &text)?;
    let arch = arch::ArchConfig::resolve(&t.arch, &t.sets).map_err(|e| user(e.to_string()))?;
    let (r, c) = (arch.mxu.rows as u64, arch.mxu.cols as u64);
    println!(
        "{}: {} layer(s) on {} ({} MXU(s) of {r}x{c} {}, {} core(s)); SCALE-Sim WS = ⌈K/R⌉·⌈N/C⌉·(2R + C + M − 2) − 1 for one {r}x{c} array",
        topo.display(),
        layers.len(),
        arch.name,
        arch.mxu.count * arch.cores_per_chip,
        match arch.mxu.dtype {
            arch::MxuDtype::Bf16 => "bf16",
            arch::MxuDtype::Int8 => "int8",
        },
        arch.cores_per_chip,
    );
    let started = std::time::Instant::now();
    let rows: Vec<Row> = layers
        .into_iter()
        .map(|l| {
            let (m, k, n) = l.shape.mkn();
            let result = simulate(t, &arch, &l)
                .map_err(|e| e.split_whitespace().collect::<Vec<_>>().join(" "));
            Row {
                formula: ws_fold_cycles(m, k, n, r, c),
                layer: l,
                result,
            }
        })
        .collect();
    let w = rows
        .iter()
        .map(|x| x.layer.name.chars().count())
        .max()
        .unwrap_or(5)
        .max(5);
    println!(
        "{:<w$}  {:<4}  {:>8}  {:>7}  {:>6}  {:>12}  {:>12}  {:>7}",
        "layer", "kind", "M", "K", "N", "cycles", "scalesim_ws", "ratio"
    );
    let mut csv_text = "layer,kind,M,K,N,cycles,scalesim_ws_cycles,ratio,error\n".to_string();
    let (mut sum_sim, mut sum_formula, mut failed) = (0u64, 0u64, 0usize);
    for row in &rows {
        let (m, k, n) = row.layer.shape.mkn();
        let name = &row.layer.name;
        match &row.result {
            Ok(cy) => {
                let ratio = *cy as f64 / row.formula.max(1) as f64;
                sum_sim += cy;
                sum_formula += row.formula;
                println!(
                    "{name:<w$}  {:<4}  {m:>8}  {k:>7}  {n:>6}  {cy:>12}  {:>12}  {ratio:>7.3}",
                    kind(&row.layer),
                    row.formula
                );
                csv_text += &format!(
                    "{},{},{m},{k},{n},{cy},{},{ratio:.4},\n",
                    csv(name),
                    kind(&row.layer),
                    row.formula
                );
            }
            Err(e) => {
                failed += 1;
                println!(
                    "{name:<w$}  {:<4}  {m:>8}  {k:>7}  {n:>6}  {:>12}  {:>12}  {:>7}  error: {e}",
                    kind(&row.layer),
                    "-",
                    row.formula,
                    "-"
                );
                csv_text += &format!(
                    "{},{},{m},{k},{n},,{},,{}\n",
                    csv(name),
                    kind(&row.layer),
                    row.formula,
                    csv(e)
                );
            }
        }
    }
    println!(
        "total ({} layer(s) simulated): {sum_sim} cycles, SCALE-Sim WS {sum_formula}, ratio {:.3}{}",
        rows.len() - failed,
        sum_sim as f64 / sum_formula.max(1) as f64,
        if failed > 0 {
            format!("; {failed} layer(s) with an error")
        } else {
            String::new()
        }
    );
    eprintln!(
        "simulated {} layer(s) in {:.3} s",
        rows.len(),
        started.elapsed().as_secs_f64()
    );
    if let Some(o) = out {
        std::fs::write(o, csv_text)
            .map_err(|e| user(format!("{}: cannot write: {e}", o.display())))?;
    }
    Ok(Outcome::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fold_formula() {
        // One fold: 2*128 + 128 + 100 - 2 - 1.
        assert_eq!(ws_fold_cycles(100, 128, 128, 128, 128), 481);
        // K=300 → 3 row folds, N=200 → 2 column folds.
        assert_eq!(
            ws_fold_cycles(10, 300, 200, 128, 128),
            6 * (256 + 128 + 8) - 1
        );
    }

    #[test]
    fn conv_rows_become_im2col_gemms() {
        let t = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n\
                 ,,,,,,,,\n\
                 Conv1,224,224,7,7,3,64,2,,,110,110,12100\n\
                 CB2a_2,56,56,3,3,64,64,1,\n";
        let l = parse(Path::new("t.csv"), t).unwrap();
        assert_eq!(l.len(), 2);
        // (224 - 7 + 2) / 2 rounded up = 110.
        assert_eq!(l[0].shape.mkn(), (110 * 110, 7 * 7 * 3, 64));
        assert_eq!(l[1].shape.mkn(), (54 * 54, 9 * 64, 64));
        assert_eq!(l[1].line, 4);
    }

    #[test]
    fn gemm_rows_are_m_n_k() {
        let l = parse(Path::new("g.csv"), "Layer, M, N, K,\nQKT,1024,1024,64,\n").unwrap();
        assert_eq!(l[0].shape.mkn(), (1024, 64, 1024));
    }

    #[test]
    fn bad_rows_name_file_line_and_field() {
        let e = parse(Path::new("g.csv"), "Layer, M, N, K,\nA,4,x,2,\n").unwrap_err();
        assert!(
            e.to_string().contains("g.csv:2: layer `A`: N is `x`"),
            "{e}"
        );
        let e = parse(Path::new("c.csv"), "nonsense\n").unwrap_err();
        assert!(
            e.to_string()
                .contains("c.csv:1: not a SCALE-Sim topology header"),
            "{e}"
        );
        let e = parse(
            Path::new("c.csv"),
            "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\nL,4,4,5,5,1,1,1,\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("filter is larger"), "{e}");
    }
}
