//! The compiled program's interface with the host: where each parameter and each output lives
//! in HBM, and the byte form of HLO literals there (row-major, little-endian, `pred` one byte).

use hlo::{ArrayData, ArrayLiteral, ElementType, Literal};
use thiserror::Error;

/// An array in HBM.
#[derive(Clone, Debug, PartialEq)]
pub struct Slot {
    /// First byte.
    pub addr: u64,
    /// Element type.
    pub ty: ElementType,
    /// Dimensions (row-major).
    pub dims: Vec<usize>,
}

impl Slot {
    /// Bytes of the array.
    pub fn bytes(&self) -> u64 {
        self.dims.iter().product::<usize>() as u64 * self.ty.byte_size() as u64
    }
}

/// A value's place: one slot per array leaf of a (possibly nested) tuple.
#[derive(Clone, Debug, PartialEq)]
pub enum Place {
    /// An array.
    Array(Slot),
    /// A tuple of places.
    Tuple(Vec<Place>),
    /// A token (no bytes).
    Token,
}

/// Where the entry computation's parameters and result live.
#[derive(Clone, Debug, PartialEq)]
pub struct IoMap {
    /// One place per parameter, by parameter number.
    pub params: Vec<Place>,
    /// The result.
    pub result: Place,
}

impl IoMap {
    /// The interface a program carries in its regions (`io=` with an array): what a compiled
    /// program file needs to be run on its own. Parameters without a region are tokens, as is
    /// a result without one; tuples are rebuilt from the leaves' index paths.
    pub fn from_program(p: &isa::Program) -> Result<IoMap, IoError> {
        #[derive(Default)]
        struct Node {
            leaf: Option<Slot>,
            kids: std::collections::BTreeMap<u32, Node>,
        }
        fn insert(n: &mut Node, path: &[u32], s: Slot) {
            match path.split_first() {
                None => n.leaf = Some(s),
                Some((k, rest)) => insert(n.kids.entry(*k).or_default(), rest, s),
            }
        }
        fn token(n: &mut Node, path: &[u32]) {
            if let Some((k, rest)) = path.split_first() {
                token(n.kids.entry(*k).or_default(), rest);
            }
        }
        fn place(n: Node, what: &str) -> Result<Place, IoError> {
            if let Some(s) = n.leaf {
                if !n.kids.is_empty() {
                    return Err(IoError::Mismatch(format!(
                        "{what} is both an array and a tuple"
                    )));
                }
                return Ok(Place::Array(s));
            }
            if n.kids.is_empty() {
                return Ok(Place::Token);
            }
            let arity = n.kids.keys().next_back().map_or(0, |k| *k as usize + 1);
            let mut kids: Vec<Place> = vec![Place::Token; arity];
            for (k, c) in n.kids {
                kids[k as usize] = place(c, what)?;
            }
            Ok(Place::Tuple(kids))
        }
        let mut params: Vec<Node> = Vec::new();
        let mut result = Node::default();
        for r in &p.regions {
            let Some(io) = &r.io else { continue };
            // The tree this place belongs to (parameter numbers are bounded: no huge Vec).
            let node = match io {
                isa::RegionIo::Param { number, .. } => {
                    let k = *number as usize;
                    if k >= 1 << 16 {
                        return Err(IoError::Mismatch(format!("parameter number {k}")));
                    }
                    if params.len() <= k {
                        params.resize_with(k + 1, Node::default);
                    }
                    &mut params[k]
                }
                isa::RegionIo::Result { .. } => &mut result,
            };
            let Some(a) = r.array.as_ref() else {
                // A token leaf: a place with no bytes.
                if r.size != 0 {
                    return Err(IoError::Mismatch(format!(
                        "region `{}` ({}) has no array type",
                        r.name,
                        io.text()
                    )));
                }
                token(node, io.index());
                continue;
            };
            let ty = ElementType::from_name(a.type_name()).ok_or_else(|| {
                IoError::Mismatch(format!(
                    "region `{}`: element type {}",
                    r.name,
                    a.type_name()
                ))
            })?;
            if a.minor_to_major
                .iter()
                .rev()
                .copied()
                .ne(0..a.dims.len() as u8)
            {
                return Err(IoError::Mismatch(format!(
                    "region `{}` ({}): only row-major layouts are read and written",
                    r.name,
                    a.text()
                )));
            }
            let slot = Slot {
                addr: r.addr,
                ty,
                dims: a.dims.iter().map(|&d| d as usize).collect(),
            };
            insert(node, io.index(), slot);
        }
        Ok(IoMap {
            params: params
                .into_iter()
                .enumerate()
                .map(|(k, n)| place(n, &format!("parameter {k}")))
                .collect::<Result<_, _>>()?,
            result: place(result, "the result")?,
        })
    }
}

/// A literal that does not match its slot.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum IoError {
    /// Shape or type mismatch.
    #[error("{0}")]
    Mismatch(String),
}

/// The bytes of an array literal (the evaluator's little-endian layout).
pub fn to_bytes(a: &ArrayLiteral) -> Vec<u8> {
    eval::convert::to_le_bytes(&a.data)
}

/// An array literal of type `ty` and `dims` from its bytes.
pub fn from_bytes(ty: ElementType, dims: &[usize], b: &[u8]) -> Result<ArrayLiteral, IoError> {
    let n: usize = dims.iter().product();
    let w = ty.byte_size();
    if b.len() != n * w {
        return Err(IoError::Mismatch(format!(
            "{} bytes for {n} elements of {ty}",
            b.len()
        )));
    }
    let data = match eval::convert::from_le_bytes(ty, b) {
        Ok(ArrayData::Raw(t, _)) => {
            return Err(IoError::Mismatch(format!(
                "element type {t} is not supported on chip yet"
            )))
        }
        Ok(d) => d,
        Err(e) => return Err(IoError::Mismatch(e.to_string())),
    };
    Ok(ArrayLiteral {
        dims: dims.to_vec(),
        data,
    })
}

/// Every `(slot, bytes)` a literal puts into HBM for `place`.
pub fn literal_bytes(
    place: &Place,
    l: &Literal,
    out: &mut Vec<(u64, Vec<u8>)>,
) -> Result<(), IoError> {
    match (place, l) {
        (Place::Array(s), Literal::Array(a)) => {
            if a.data.element_type() != s.ty || a.dims != s.dims {
                return Err(IoError::Mismatch(format!(
                    "expected {}{:?}, got {}{:?}",
                    s.ty,
                    s.dims,
                    a.data.element_type(),
                    a.dims
                )));
            }
            out.push((s.addr, to_bytes(a)));
            Ok(())
        }
        (Place::Tuple(ps), Literal::Tuple(ls)) if ps.len() == ls.len() => {
            for (p, l) in ps.iter().zip(ls) {
                literal_bytes(p, l, out)?;
            }
            Ok(())
        }
        (Place::Token, Literal::Token) => Ok(()),
        _ => Err(IoError::Mismatch(
            "literal does not match the parameter's shape".into(),
        )),
    }
}

/// Reads the literal at `place` with `read(addr, len)`.
pub fn read_literal(
    place: &Place,
    read: &mut dyn FnMut(u64, u64) -> Option<Vec<u8>>,
) -> Result<Literal, IoError> {
    Ok(match place {
        Place::Array(s) => {
            let b = read(s.addr, s.bytes())
                .ok_or_else(|| IoError::Mismatch(format!("cannot read HBM at {:#x}", s.addr)))?;
            Literal::Array(from_bytes(s.ty, &s.dims, &b)?)
        }
        Place::Tuple(ps) => Literal::Tuple(
            ps.iter()
                .map(|p| read_literal(p, read))
                .collect::<Result<_, _>>()?,
        ),
        Place::Token => Literal::Token,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    #[test]
    fn bytes_round_trip_every_chip_type() {
        let cases = [
            ArrayData::Pred(vec![true, false]),
            ArrayData::S8(vec![-1, 7]),
            ArrayData::U16(vec![65535, 1]),
            ArrayData::S32(vec![i32::MIN, 3]),
            ArrayData::U64(vec![u64::MAX, 0]),
            ArrayData::BF16(vec![bf16::from_f32(1.5), bf16::from_f32(-2.0)]),
            ArrayData::F16(vec![f16::from_f32(0.25), f16::from_f32(-8.0)]),
            ArrayData::F32(vec![1.0e-3, f32::INFINITY]),
            ArrayData::F64(vec![std::f64::consts::PI, -0.0]),
        ];
        for d in cases {
            let a = ArrayLiteral {
                dims: vec![2],
                data: d,
            };
            let b = to_bytes(&a);
            let back = from_bytes(a.data.element_type(), &[2], &b).unwrap();
            assert_eq!(to_bytes(&back), b);
            assert_eq!(back.data.element_type(), a.data.element_type());
        }
    }
}
