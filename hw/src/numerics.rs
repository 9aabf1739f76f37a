//! The Rust side of the PE and accumulator arithmetic for rust-hdl simulation, delegated to
//! `sim::numerics` (the contract's one software implementation), so hw has no numeric model of
//! its own.

use sim::numerics as n;

/// `p + a·w` in i32, wrapping (bits in, bits out).
pub fn mac_i8(p: u32, a: i8, w: i8) -> u32 {
    n::i32_add(p as i32, n::int8_product(a, w)) as u32
}

/// `add(p, a·w)` with the contract's bf16 product and f32 addition (bits in, bits out).
pub fn mac_bf16(p: u32, a: u16, w: u16) -> u32 {
    n::f32_add(p, n::bf16_product(a, w))
}

/// The contract's f32 addition on bit patterns.
pub fn add_f32_bits(a: u32, b: u32) -> u32 {
    n::f32_add(a, b)
}
