//! Computation domains and the conversions of typed buffers into and out of them.
//!
//! A kernel reads its operands into one [`Domain`] (the join of all element types involved,
//! result included), computes there, and converts the result into the declared element type
//! with one rounding (floats: round to nearest even; integers: wrap modulo 2^bits, as XLA's
//! integer arithmetic does; float to integer: saturating, NaN to 0; pred: `!= 0`).

use super::{KResult, KernelError};
use half::{bf16, f16};
use hlo::literal::ArrayData;
use hlo::types::{ElementType, TypeKind};
use num_complex::{Complex32, Complex64};

/// The arithmetic a kernel computes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Domain {
    /// pred and all integers: 64-bit two's complement, wrapping.
    I64,
    /// f16, bf16, f32.
    F32,
    F64,
    C64,
    C128,
}

impl Domain {
    /// The domain of one element type.
    pub fn of(ty: ElementType) -> KResult<Domain> {
        if ty.is_carried_only() {
            return Err(KernelError::unsupported(format!(
                "arithmetic on element type {ty}"
            )));
        }
        Ok(match ty {
            ElementType::F16 | ElementType::BF16 | ElementType::F32 => Domain::F32,
            ElementType::F64 => Domain::F64,
            ElementType::C64 => Domain::C64,
            ElementType::C128 => Domain::C128,
            _ => Domain::I64,
        })
    }

    /// The smallest domain that holds every type in `types` exactly (c64 joined with f64 is
    /// c128).
    pub fn join(types: &[ElementType]) -> KResult<Domain> {
        let mut complex = false;
        let mut wide = false;
        let mut float = false;
        for &t in types {
            match Domain::of(t)? {
                Domain::I64 => {}
                Domain::F32 => float = true,
                Domain::F64 => {
                    float = true;
                    wide = true
                }
                Domain::C64 => complex = true,
                Domain::C128 => {
                    complex = true;
                    wide = true
                }
            }
        }
        Ok(match (complex, float, wide) {
            (true, _, true) => Domain::C128,
            (true, _, false) => Domain::C64,
            (false, true, true) => Domain::F64,
            (false, true, false) => Domain::F32,
            (false, false, _) => Domain::I64,
        })
    }
}

/// A buffer converted into a domain.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    C64(Vec<Complex32>),
    C128(Vec<Complex64>),
}

macro_rules! map_real {
    ($data:expr, $x:ident => $e:expr, $bf:ident => $eb:expr, $h:ident => $eh:expr) => {
        match $data {
            ArrayData::Pred(v) => v
                .iter()
                .map(|&$x| {
                    let $x = $x as u8;
                    $e
                })
                .collect(),
            ArrayData::S8(v) => v.iter().map(|&$x| $e).collect(),
            ArrayData::S16(v) => v.iter().map(|&$x| $e).collect(),
            ArrayData::S32(v) => v.iter().map(|&$x| $e).collect(),
            ArrayData::S64(v) => v.iter().map(|&$x| $e).collect(),
            ArrayData::U8(v) => v.iter().map(|&$x| $e).collect(),
            ArrayData::U16(v) => v.iter().map(|&$x| $e).collect(),
            ArrayData::U32(v) => v.iter().map(|&$x| $e).collect(),
            ArrayData::U64(v) => v.iter().map(|&$x| $e).collect(),
            ArrayData::F16(v) => v.iter().map(|&$h| $eh).collect(),
            ArrayData::BF16(v) => v.iter().map(|&$bf| $eb).collect(),
            ArrayData::F32(v) => v.iter().map(|&$x| $e).collect(),
            ArrayData::F64(v) => v.iter().map(|&$x| $e).collect(),
            ArrayData::C64(_) | ArrayData::C128(_) | ArrayData::Raw(..) => {
                return Err(KernelError::unsupported(format!(
                    "converting {} values to a real domain",
                    $data.element_type()
                )))
            }
        }
    };
}

impl Values {
    /// Reads `data` into `domain`. Complex data is only read into a complex domain; carried-only
    /// types are refused.
    pub fn read(data: &ArrayData, domain: Domain) -> KResult<Values> {
        Ok(match domain {
            Domain::I64 => Values::I64(to_i64(data)?),
            Domain::F32 => Values::F32(to_f32(data)?),
            Domain::F64 => Values::F64(to_f64(data)?),
            Domain::C64 => Values::C64(match data {
                ArrayData::C64(v) => v.clone(),
                ArrayData::C128(v) => v
                    .iter()
                    .map(|c| Complex32::new(c.re as f32, c.im as f32))
                    .collect(),
                d => to_f32(d)?
                    .into_iter()
                    .map(|x| Complex32::new(x, 0.0))
                    .collect(),
            }),
            Domain::C128 => Values::C128(match data {
                ArrayData::C64(v) => v
                    .iter()
                    .map(|c| Complex64::new(c.re as f64, c.im as f64))
                    .collect(),
                ArrayData::C128(v) => v.clone(),
                d => to_f64(d)?
                    .into_iter()
                    .map(|x| Complex64::new(x, 0.0))
                    .collect(),
            }),
        })
    }

    /// Converts into a buffer of element type `ty` (one rounding).
    pub fn write(self, ty: ElementType) -> KResult<ArrayData> {
        match self {
            Values::I64(v) => from_i64(&v, ty),
            Values::F32(v) => from_f64_iter(v.iter().map(|&x| x as f64), ty, Some(&v)),
            Values::F64(v) => from_f64_iter(v.iter().copied(), ty, None),
            Values::C64(v) => match ty {
                ElementType::C64 => Ok(ArrayData::C64(v)),
                ElementType::C128 => Ok(ArrayData::C128(
                    v.iter()
                        .map(|c| Complex64::new(c.re as f64, c.im as f64))
                        .collect(),
                )),
                t => Err(KernelError::invalid(format!(
                    "a complex result cannot be stored as {t}"
                ))),
            },
            Values::C128(v) => match ty {
                ElementType::C128 => Ok(ArrayData::C128(v)),
                ElementType::C64 => Ok(ArrayData::C64(
                    v.iter()
                        .map(|c| Complex32::new(c.re as f32, c.im as f32))
                        .collect(),
                )),
                t => Err(KernelError::invalid(format!(
                    "a complex result cannot be stored as {t}"
                ))),
            },
        }
    }
}

/// Every value of a real (non-complex) buffer as i64; floats truncate (saturating).
pub fn to_i64(data: &ArrayData) -> KResult<Vec<i64>> {
    Ok(map_real!(data, x => x as i64, b => b.to_f32() as i64, h => h.to_f32() as i64))
}

/// Every value of a real buffer as f32 (rounded to nearest).
pub fn to_f32(data: &ArrayData) -> KResult<Vec<f32>> {
    Ok(map_real!(data, x => x as f32, b => b.to_f32(), h => h.to_f32()))
}

/// Every value of a real buffer as f64.
pub fn to_f64(data: &ArrayData) -> KResult<Vec<f64>> {
    Ok(map_real!(data, x => x as f64, b => b.to_f64(), h => h.to_f64()))
}

/// Wrapping conversion of i64 values into an integer/pred/float type.
fn from_i64(v: &[i64], ty: ElementType) -> KResult<ArrayData> {
    use ElementType as T;
    Ok(match ty {
        T::Pred => ArrayData::Pred(v.iter().map(|&x| x != 0).collect()),
        T::S8 => ArrayData::S8(v.iter().map(|&x| x as i8).collect()),
        T::S16 => ArrayData::S16(v.iter().map(|&x| x as i16).collect()),
        T::S32 => ArrayData::S32(v.iter().map(|&x| x as i32).collect()),
        T::S64 => ArrayData::S64(v.to_vec()),
        T::U8 => ArrayData::U8(v.iter().map(|&x| x as u8).collect()),
        T::U16 => ArrayData::U16(v.iter().map(|&x| x as u16).collect()),
        T::U32 => ArrayData::U32(v.iter().map(|&x| x as u32).collect()),
        T::U64 => ArrayData::U64(v.iter().map(|&x| x as u64).collect()),
        t if t.kind() == TypeKind::Float || t.is_complex() => {
            return from_f64_iter(v.iter().map(|&x| x as f64), t, None)
        }
        t => {
            return Err(KernelError::unsupported(format!(
                "results of element type {t}"
            )))
        }
    })
}

/// Converts float values into `ty`. `exact_f32` carries the original f32 values when the source
/// was f32, so that f32 → f16/bf16 rounds once from f32 (identical to rounding from the exact
/// f64 widening, kept for clarity and speed).
fn from_f64_iter(
    v: impl Iterator<Item = f64>,
    ty: ElementType,
    exact_f32: Option<&Vec<f32>>,
) -> KResult<ArrayData> {
    use ElementType as T;
    if let Some(f) = exact_f32 {
        match ty {
            T::F32 => return Ok(ArrayData::F32(f.clone())),
            T::BF16 => {
                return Ok(ArrayData::BF16(
                    f.iter().map(|&x| bf16::from_f32(x)).collect(),
                ))
            }
            T::F16 => {
                return Ok(ArrayData::F16(
                    f.iter().map(|&x| f16::from_f32(x)).collect(),
                ))
            }
            _ => {}
        }
    }
    Ok(match ty {
        T::Pred => ArrayData::Pred(v.map(|x| x != 0.0).collect()),
        T::S8 => ArrayData::S8(v.map(|x| x as i8).collect()),
        T::S16 => ArrayData::S16(v.map(|x| x as i16).collect()),
        T::S32 => ArrayData::S32(v.map(|x| x as i32).collect()),
        T::S64 => ArrayData::S64(v.map(|x| x as i64).collect()),
        T::U8 => ArrayData::U8(v.map(|x| x as u8).collect()),
        T::U16 => ArrayData::U16(v.map(|x| x as u16).collect()),
        T::U32 => ArrayData::U32(v.map(|x| x as u32).collect()),
        T::U64 => ArrayData::U64(v.map(|x| x as u64).collect()),
        T::F16 => ArrayData::F16(v.map(f16::from_f64).collect()),
        T::BF16 => ArrayData::BF16(v.map(bf16::from_f64).collect()),
        T::F32 => ArrayData::F32(v.map(|x| x as f32).collect()),
        T::F64 => ArrayData::F64(v.collect()),
        T::C64 => ArrayData::C64(v.map(|x| Complex32::new(x as f32, 0.0)).collect()),
        T::C128 => ArrayData::C128(v.map(|x| Complex64::new(x, 0.0)).collect()),
        t => {
            return Err(KernelError::unsupported(format!(
                "results of element type {t}"
            )))
        }
    })
}

pub use hlo::shape::strides;

/// Checks that a computed result shape equals the declared one (dims and element type).
pub fn check_result(
    op: &str,
    declared: &hlo::shape::ArrayShape,
    dims: &[usize],
    ty: ElementType,
) -> KResult<()> {
    let declared_dims = declared.udims();
    // A dynamic dimension holds any size up to its bound.
    let fits = declared_dims.len() == dims.len()
        && declared_dims
            .iter()
            .zip(dims)
            .zip(&declared.dynamic)
            .all(|((&b, &d), &dy)| if dy { d <= b } else { d == b });
    if !fits || declared.ty != ty {
        let computed =
            hlo::shape::ArrayShape::new(ty, &dims.iter().map(|&d| d as i64).collect::<Vec<_>>());
        return Err(KernelError::invalid(format!(
            "{op}: declared result shape {declared} differs from the computed {computed}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_rules() {
        use ElementType as T;
        assert_eq!(Domain::join(&[T::S8, T::S8, T::S32]).unwrap(), Domain::I64);
        assert_eq!(
            Domain::join(&[T::BF16, T::BF16, T::F32]).unwrap(),
            Domain::F32
        );
        assert_eq!(Domain::join(&[T::F32, T::F64]).unwrap(), Domain::F64);
        assert_eq!(Domain::join(&[T::C64, T::F64]).unwrap(), Domain::C128);
        assert!(Domain::join(&[T::F8E5M2]).is_err());
    }

    #[test]
    fn rounding_and_wrapping() {
        // 1 + 2^-8 rounds (tie, to even) to 1; 1 + 3·2^-8 rounds up to 1 + 2^-6.
        let v = Values::F32(vec![1.0 + 1.0 / 256.0, 1.0 + 3.0 / 256.0]);
        assert_eq!(
            v.write(ElementType::BF16).unwrap(),
            ArrayData::BF16(vec![bf16::from_f32(1.0), bf16::from_f32(1.015625)])
        );
        let w = Values::I64(vec![300, -129]);
        assert_eq!(
            w.write(ElementType::S8).unwrap(),
            ArrayData::S8(vec![44, 127])
        );
        let u = to_i64(&ArrayData::U64(vec![u64::MAX])).unwrap();
        assert_eq!(
            Values::I64(u).write(ElementType::U64).unwrap(),
            ArrayData::U64(vec![u64::MAX])
        );
    }
}
