//! Static checks of a [`Program`] against an [`ArchConfig`]: everything about the program that
//! can be wrong for a given chip without running it (MXU index, tile sizes and modes, operand
//! constraints, data segments and regions inside their memories). The simulator still checks
//! register-dependent addresses at run time.

use crate::operand::Space;
use crate::program::{Program, ProgramError};
use crate::table::Inst;
use arch::{ArchConfig, MxuDtype};

impl Program {
    /// Checks the program against `arch`; the error lists every problem found.
    pub fn check_against(&self, arch: &ArchConfig) -> Result<(), ProgramError> {
        let e: Vec<String> = self
            .fit_errors(arch)
            .into_iter()
            .map(|(pc, msg)| match pc {
                Some(pc) => format!("instruction {pc} {msg}"),
                None => msg,
            })
            .collect();
        if e.is_empty() {
            Ok(())
        } else {
            Err(ProgramError::Invalid(e))
        }
    }

    /// Every way the program does not fit `arch`: `(Some(pc), "`mnemonic`: why")` for an
    /// instruction (so a caller with a line table can name FILE:LINE:COL), `(None, why)` for
    /// data segments and regions.
    pub fn fit_errors(&self, arch: &ArchConfig) -> Vec<(Option<usize>, String)> {
        let mut e = Vec::new();
        for (pc, inst) in self.code.iter().enumerate() {
            let sym = self
                .symbol_at(pc as u32)
                .map(|s| format!(" (HLO {s})"))
                .unwrap_or_default();
            for msg in check_inst(arch, inst) {
                e.push((Some(pc), format!("`{}`{sym}: {msg}", inst.mnemonic())));
            }
        }
        let size = |s: Space| match s {
            Space::Hbm => arch.hbm.bytes,
            Space::Vmem => arch.vmem.bytes,
        };
        for (i, d) in self.data.iter().enumerate() {
            let end = d.addr.checked_add(d.bytes.len() as u64);
            if exceeds(end, size(d.space)) {
                e.push((
                    None,
                    format!(
                        "data segment {i}: {} bytes at {} {} exceed its {} bytes",
                        d.bytes.len(),
                        d.space.name(),
                        d.addr,
                        size(d.space)
                    ),
                ));
            }
        }
        for r in &self.regions {
            if exceeds(r.addr.checked_add(r.size), size(r.space)) {
                e.push((
                    None,
                    format!(
                        "region `{}` ({} bytes at {} {}) exceeds its {} bytes",
                        r.name,
                        r.size,
                        r.space.name(),
                        r.addr,
                        size(r.space)
                    ),
                ));
            }
        }
        e
    }
}

/// Whether a computed end address overflowed or lies past `limit`.
fn exceeds(end: Option<u64>, limit: u64) -> bool {
    match end {
        None => true,
        Some(v) => v > limit,
    }
}

fn range(out: &mut Vec<String>, what: &str, v: u32, lo: u32, hi: u32) {
    if v < lo || v > hi {
        out.push(format!("{what}={v} must be in {lo}..={hi}"));
    }
}

fn check_inst(arch: &ArchConfig, inst: &Inst) -> Vec<String> {
    let m = &arch.mxu;
    let mut out = Vec::new();
    let unit = |u: u32| {
        if u >= m.count {
            Some(format!("mxu={u} but the core has {} MXU(s)", m.count))
        } else {
            None
        }
    };
    let mode_ok = |d: MxuDtype| m.dtypes.contains(&d);
    let bad = &mut out;
    match *inst {
        Inst::MxuLdw {
            mxu, k, n, mode, ..
        } => {
            if let Some(msg) = unit(mxu) {
                bad.push(msg);
            }
            range(bad, "k", k, 1, m.rows);
            range(bad, "n", n, 1, m.cols);
            if !mode_ok(mode) {
                bad.push(format!("mode={} is not one of mxu.dtypes", mode.name()));
            }
        }
        Inst::MxuMatmul {
            mxu,
            m: rows,
            k,
            mode,
            ..
        } => {
            if let Some(msg) = unit(mxu) {
                bad.push(msg);
            }
            range(bad, "m", rows, 1, u32::MAX);
            range(bad, "k", k, 1, m.rows);
            if !mode_ok(mode) {
                bad.push(format!("mode={} is not one of mxu.dtypes", mode.name()));
            }
        }
        Inst::MxuSt {
            mxu, m: rows, n, ..
        } => {
            if let Some(msg) = unit(mxu) {
                bad.push(msg);
            }
            range(bad, "m", rows, 1, u32::MAX);
            range(bad, "n", n, 1, m.cols);
        }
        Inst::VIota { div, modulo, .. } => {
            range(bad, "div", div, 1, u32::MAX);
            range(bad, "modulo", modulo, 1, u32::MAX);
        }
        Inst::VScatter {
            op, t, set: false, ..
        }
        | Inst::VReduce { op, t, .. } => {
            if let Inst::VReduce { cols, .. } = inst {
                range(bad, "cols", *cols, 1, u32::MAX);
            }
            use crate::operand::{DType, RedOp};
            let logic = matches!(op, RedOp::And | RedOp::Or | RedOp::Xor);
            let arith = matches!(op, RedOp::Add | RedOp::Mul);
            if logic && t.is_float() {
                bad.push(format!(
                    "op={} needs an integer or pred type, not {}",
                    op.name(),
                    t.name()
                ));
            }
            if arith && t == DType::Pred {
                bad.push(format!(
                    "op={} needs an integer or float type, not pred",
                    op.name()
                ));
            }
        }
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::asm::assemble;

    #[test]
    fn checks_against_mini() {
        let arch = arch::ArchConfig::preset("mini").unwrap();
        let p = assemble(
            ".region \"big\" vmem 0 1000000\n.data hbm 1048570 0102030405060708\n\
             mxu.ldw [s0], mxu=1, k=9, n=0, stride=8, mode=int8\n\
             .hlo \"dot.7\"\n\
             mxu.matmul [s0], acc[s0], mxu=0, m=0, k=8, stride=8, mode=bf16, accumulate=0\n\
             .hlo -\n\
             vpu.iota [s0], n=4, div=0, modulo=3, t=s32\n\
             vpu.reduce [s0], [s0], rows=1, cols=0, t=f32, op=and\n\
             halt\n",
        )
        .unwrap();
        let e = p.check_against(&arch).unwrap_err().to_string();
        for want in [
            "mxu=1 but the core has 1 MXU(s)",
            "k=9 must be in 1..=8",
            "n=0 must be in 1..=8",
            "instruction 1 `mxu.matmul` (HLO dot.7): m=0",
            "div=0",
            "cols=0",
            "op=and needs an integer or pred type",
            "data segment 0",
            "region `big`",
        ] {
            assert!(e.contains(want), "missing `{want}` in:\n{e}");
        }
        // mini accepts bf16 too (mxu.dtypes = [int8, bf16]): no mode complaint.
        assert!(!e.contains("mode=bf16"), "{e}");
        let v1 = arch::ArchConfig::preset("tpu-v1").unwrap();
        let e = p.check_against(&v1).unwrap_err().to_string();
        assert!(e.contains("mode=bf16 is not one of mxu.dtypes"), "{e}");
    }

    #[test]
    fn the_docs_example_fits_mini() {
        let pre = include_str!("prelude.md");
        let start = pre.find("```asm\n").unwrap() + 7;
        let end = start + pre[start..].find("```").unwrap();
        let p = assemble(&pre[start..end]).unwrap();
        p.check_against(&arch::ArchConfig::preset("mini").unwrap())
            .unwrap();
    }
}
