//! Shapes: arrays (element type, dimensions, dynamic-dimension flags, optional layout),
//! tuples and tokens.
//!
//! Invariants: `ArrayShape::dims.len() == ArrayShape::dynamic.len()`; a dynamic dimension's
//! size is its upper bound (`f32[<=6]` has `dims = [6]`, `dynamic = [true]`); an unbounded
//! dynamic dimension (`f32[?]`) has size [`UNBOUNDED`]. The layout, when present, lists the
//! dimensions minor-to-major; it never changes the logical values of a literal.

use crate::types::ElementType;
use std::fmt;

/// Size recorded for an unbounded dynamic dimension (`?`).
pub const UNBOUNDED: i64 = i64::MIN;

/// A physical layout: `{1,0}`, optionally with a tail such as `:T(8,128)` kept verbatim.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    pub minor_to_major: Vec<i64>,
    /// Everything after `:` inside the braces (tiling, memory space), verbatim, without the `:`.
    pub tail: Option<String>,
}

impl Layout {
    /// The default (row-major) layout for `rank` dimensions: `{rank-1, ..., 0}`.
    pub fn row_major(rank: usize) -> Layout {
        Layout {
            minor_to_major: (0..rank as i64).rev().collect(),
            tail: None,
        }
    }
}

/// The shape of a dense array.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArrayShape {
    pub ty: ElementType,
    pub dims: Vec<i64>,
    pub dynamic: Vec<bool>,
    pub layout: Option<Layout>,
}

impl ArrayShape {
    /// A static shape without layout.
    pub fn new(ty: ElementType, dims: &[i64]) -> ArrayShape {
        ArrayShape {
            ty,
            dims: dims.to_vec(),
            dynamic: vec![false; dims.len()],
            layout: None,
        }
    }
    pub fn scalar(ty: ElementType) -> ArrayShape {
        ArrayShape::new(ty, &[])
    }
    pub fn rank(&self) -> usize {
        self.dims.len()
    }
    pub fn is_scalar(&self) -> bool {
        self.dims.is_empty()
    }
    pub fn is_dynamic(&self) -> bool {
        self.dynamic.iter().any(|&d| d)
    }
    /// Number of elements (upper bound for dynamic shapes), `None` on overflow or unbounded.
    pub fn element_count(&self) -> Option<u64> {
        self.dims.iter().try_fold(1u64, |acc, &d| {
            if d < 0 {
                None
            } else {
                acc.checked_mul(d as u64)
            }
        })
    }
    /// Bytes of a dense buffer of this shape, `None` on overflow.
    pub fn byte_size(&self) -> Option<u64> {
        self.element_count()?
            .checked_mul(self.ty.byte_size() as u64)
    }
    /// Same type and dimensions (and dynamic flags), ignoring layout.
    pub fn same_dims_and_type(&self, other: &ArrayShape) -> bool {
        self.ty == other.ty && self.dims == other.dims && self.dynamic == other.dynamic
    }
    /// Same dimensions (and dynamic flags), ignoring element type and layout.
    pub fn same_dims(&self, other: &ArrayShape) -> bool {
        self.dims == other.dims && self.dynamic == other.dynamic
    }
    /// This shape with another element type.
    pub fn with_type(&self, ty: ElementType) -> ArrayShape {
        ArrayShape { ty, ..self.clone() }
    }
    /// Dimensions as `usize` (static sizes or bounds). Callers must have verified the shape.
    pub fn udims(&self) -> Vec<usize> {
        self.dims.iter().map(|&d| d.max(0) as usize).collect()
    }
}

/// Any HLO shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    Array(ArrayShape),
    Tuple(Vec<Shape>),
    Token,
}

impl Shape {
    pub fn array(ty: ElementType, dims: &[i64]) -> Shape {
        Shape::Array(ArrayShape::new(ty, dims))
    }
    pub fn scalar(ty: ElementType) -> Shape {
        Shape::Array(ArrayShape::scalar(ty))
    }
    pub fn as_array(&self) -> Option<&ArrayShape> {
        match self {
            Shape::Array(a) => Some(a),
            _ => None,
        }
    }
    pub fn as_tuple(&self) -> Option<&[Shape]> {
        match self {
            Shape::Tuple(t) => Some(t),
            _ => None,
        }
    }
    pub fn is_array(&self) -> bool {
        matches!(self, Shape::Array(_))
    }
    pub fn is_tuple(&self) -> bool {
        matches!(self, Shape::Tuple(_))
    }
    pub fn is_token(&self) -> bool {
        matches!(self, Shape::Token)
    }
    /// Equal ignoring layouts (recursively).
    pub fn compatible(&self, other: &Shape) -> bool {
        match (self, other) {
            (Shape::Array(a), Shape::Array(b)) => a.same_dims_and_type(b),
            (Shape::Tuple(a), Shape::Tuple(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.compatible(y))
            }
            (Shape::Token, Shape::Token) => true,
            _ => false,
        }
    }
    /// This shape with every layout removed (recursively).
    pub fn without_layout(&self) -> Shape {
        match self {
            Shape::Array(a) => Shape::Array(ArrayShape {
                layout: None,
                ..a.clone()
            }),
            Shape::Tuple(t) => Shape::Tuple(t.iter().map(Shape::without_layout).collect()),
            Shape::Token => Shape::Token,
        }
    }
    /// Nesting depth of tuples (an array or token is 0).
    pub fn tuple_depth(&self) -> usize {
        match self {
            Shape::Tuple(t) => 1 + t.iter().map(Shape::tuple_depth).max().unwrap_or(0),
            _ => 0,
        }
    }
    /// Total bytes of all arrays in this shape, `None` on overflow.
    pub fn byte_size(&self) -> Option<u64> {
        match self {
            Shape::Array(a) => a.byte_size(),
            Shape::Tuple(t) => t
                .iter()
                .try_fold(0u64, |acc, s| acc.checked_add(s.byte_size()?)),
            Shape::Token => Some(0),
        }
    }
}

/// A computation's signature: `(p0, p1, ...) -> result`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProgramShape {
    pub params: Vec<Shape>,
    pub result: Shape,
}

fn write_dims(f: &mut fmt::Formatter<'_>, a: &ArrayShape) -> fmt::Result {
    f.write_str("[")?;
    for (i, (&d, &dy)) in a.dims.iter().zip(&a.dynamic).enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        if d == UNBOUNDED {
            f.write_str("?")?;
        } else if dy {
            write!(f, "<={d}")?;
        } else {
            write!(f, "{d}")?;
        }
    }
    f.write_str("]")
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, d) in self.minor_to_major.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{d}")?;
        }
        if let Some(t) = &self.tail {
            write!(f, ":{t}")?;
        }
        f.write_str("}")
    }
}

impl fmt::Display for ArrayShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.ty.name())?;
        write_dims(f, self)?;
        if let Some(l) = &self.layout {
            write!(f, "{l}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shape::Array(a) => write!(f, "{a}"),
            Shape::Token => f.write_str("token[]"),
            Shape::Tuple(t) => {
                f.write_str("(")?;
                for (i, s) in t.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{s}")?;
                }
                f.write_str(")")
            }
        }
    }
}

impl fmt::Display for ProgramShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        for (i, s) in self.params.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{s}")?;
        }
        write!(f, ")->{}", self.result)
    }
}

/// Row-major strides of `dims` (in elements): `strides[d]` is the product of the dimensions
/// after `d`. The one copy: the evaluator, the compiler and [`crate::indexing`] use it.
pub fn strides(dims: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; dims.len()];
    for d in (0..dims.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * dims[d + 1];
    }
    s
}

/// Advances a row-major multi-index; returns false after the last index.
pub fn next_index(idx: &mut [usize], dims: &[usize]) -> bool {
    for d in (0..dims.len()).rev() {
        idx[d] += 1;
        if idx[d] < dims[d] {
            return true;
        }
        idx[d] = 0;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_forms() {
        let mut a = ArrayShape::new(ElementType::F32, &[2, 3]);
        a.layout = Some(Layout::row_major(2));
        assert_eq!(a.to_string(), "f32[2,3]{1,0}");
        let d = ArrayShape {
            dynamic: vec![true],
            ..ArrayShape::new(ElementType::S32, &[6])
        };
        assert_eq!(d.to_string(), "s32[<=6]");
        let t = Shape::Tuple(vec![Shape::scalar(ElementType::Pred), Shape::Token]);
        assert_eq!(t.to_string(), "(pred[], token[])");
    }

    #[test]
    fn absurd_sizes_do_not_overflow() {
        let a = ArrayShape::new(ElementType::F32, &[4_000_000_000_000, 8_000_000_000_000]);
        assert_eq!(a.byte_size(), None);
    }
}
