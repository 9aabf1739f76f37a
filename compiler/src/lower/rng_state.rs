//! `rng-get-and-update-state(), delta=D`: returns `u64[2] = [counter, seed]` and advances the
//! counter by `D`, the evaluator's definition (`eval::linalg::rng`), which the rng expander
//! (`passes/rng.rs`) threads every `rng` through when draws happen at run time (in loops,
//! branches, called computations).
//!
//! The counter is one 8-byte cell of program data in HBM (0 when the program is loaded, as the
//! evaluator's stream starts; each chip has its own, as each replica has its own stream in the
//! evaluator); the seed is 0. Per instruction: a DMA copies the counter into the result's first
//! word, the seed is splat into the second, the VPU adds `D` (u64, the emulated 64-bit path) and
//! a DMA writes the sum back. The emitter orders the next instruction's read after that write
//! (and every path through a loop or branch is fenced), so draws see each other's updates in
//! program order. Cost: two dependent small DMAs (an HBM latency each) and two VPU
//! instructions.

use super::{Buf, Lowerer, Val};
use crate::error::CResult;
use hlo::{ElementType, InstId, Opcode};
use isa::Space;

/// The seed of the chip's stream (the evaluator's default `RngState`).
const SEED: u64 = 0;

/// Lowers `rng-get-and-update-state`; `None` if `h` is not one.
pub fn lower(l: &mut Lowerer<'_>, h: InstId) -> CResult<Option<Val>> {
    let inst = &l.comp().insts[h];
    if inst.opcode != Opcode::RngGetAndUpdateState {
        return Ok(None);
    }
    let delta = inst
        .attrs
        .extra
        .iter()
        .find(|(k, _)| k == "delta")
        .and_then(|(_, v)| v.trim().parse::<u64>().ok())
        .ok_or_else(|| l.unsupported("rng-get-and-update-state without a numeric delta"))?;
    let cell = match l.rng_state {
        Some(a) => a,
        None => {
            let a = l.hbm_slot(8, "the rng counter")?;
            l.e.b.data(Space::Hbm, a, vec![0u8; 8]);
            l.rng_state = Some(a);
            a
        }
    };
    let out = l.new_buf(h, ElementType::U64, vec![2])?;
    let ctr = Buf {
        dims: vec![1],
        ..out.clone()
    };
    let seed = Buf {
        addr: out.addr + 8,
        dims: vec![1],
        ..out.clone()
    };
    l.dma((Space::Vmem, ctr.addr), (Space::Hbm, cell), 8)?;
    let s = l.vconst(ElementType::U64, SEED, 1)?;
    l.copy_into(&seed, &s)?;
    l.release(&s);
    let next = l.vop2c(Opcode::Add, &ctr, delta)?;
    l.dma((Space::Hbm, cell), (Space::Vmem, next.addr), 8)?;
    l.release(&next);
    Ok(Some(Val::Array(out)))
}
