//! Elementwise ops: unary functions, binary arithmetic (with broadcasting), comparisons,
//! conversions, clamp and select.

use super::{BResult, XlaBuilder, XlaOp};
use crate::attrs::{Attrs, ComparisonDirection, ComparisonType};
use crate::opcode::Opcode;
use crate::shape::Shape;
use crate::types::ElementType;

macro_rules! unary_ops {
    ($( $(#[$d:meta])* $f:ident => $op:ident; )*) => {
        impl XlaBuilder {
            $( $(#[$d])* pub fn $f(&mut self, x: XlaOp) -> BResult<XlaOp> {
                self.add_instruction(Opcode::$op, &[x], Attrs::default(), None)
            } )*
        }
    };
}

unary_ops! {
    abs => Abs;
    cbrt => Cbrt;
    ceil => Ceil;
    /// Count leading zeros (`Clz`).
    clz => Clz;
    cos => Cos;
    erf => Erf;
    exp => Exp;
    expm1 => Expm1;
    floor => Floor;
    imag => Imag;
    is_finite => IsFinite;
    log => Log;
    log1p => Log1p;
    logistic => Logistic;
    neg => Negate;
    not => Not;
    population_count => PopCnt;
    real => Real;
    /// Round half away from zero (`Round`).
    round => RoundAfz;
    round_nearest_even => RoundEven;
    rsqrt => Rsqrt;
    sign => Sign;
    sin => Sin;
    sqrt => Sqrt;
    tan => Tan;
    tanh => Tanh;
}

macro_rules! binary_ops {
    ($( $f:ident, $fd:ident => $op:ident; )*) => {
        impl XlaBuilder {
            $(
            /// Elementwise; scalar and degenerate-dimension broadcasting apply.
            pub fn $f(&mut self, lhs: XlaOp, rhs: XlaOp) -> BResult<XlaOp> {
                self.binary_op(Opcode::$op, lhs, rhs, &[])
            }
            /// Elementwise with `broadcast_dimensions` for operands of different rank.
            pub fn $fd(&mut self, lhs: XlaOp, rhs: XlaOp, broadcast_dimensions: &[i64]) -> BResult<XlaOp> {
                self.binary_op(Opcode::$op, lhs, rhs, broadcast_dimensions)
            }
            )*
        }
    };
}

binary_ops! {
    add, add_in_dim => Add;
    sub, sub_in_dim => Subtract;
    mul, mul_in_dim => Multiply;
    div, div_in_dim => Divide;
    rem, rem_in_dim => Remainder;
    max, max_in_dim => Maximum;
    min, min_in_dim => Minimum;
    pow, pow_in_dim => Power;
    and, and_in_dim => And;
    or, or_in_dim => Or;
    xor, xor_in_dim => Xor;
    shift_left, shift_left_in_dim => ShiftLeft;
    shift_right_arithmetic, shift_right_arithmetic_in_dim => ShiftRightArithmetic;
    shift_right_logical, shift_right_logical_in_dim => ShiftRightLogical;
    atan2, atan2_in_dim => Atan2;
    complex, complex_in_dim => Complex;
}

impl XlaBuilder {
    /// `compare` with broadcasting; `ty = None` picks the default comparison type of the
    /// element type (FLOAT, SIGNED or UNSIGNED).
    pub fn compare(
        &mut self,
        lhs: XlaOp,
        rhs: XlaOp,
        direction: ComparisonDirection,
        ty: Option<ComparisonType>,
        broadcast_dimensions: &[i64],
    ) -> BResult<XlaOp> {
        let (l, r) = (
            self.array_shape(lhs, "compare")?,
            self.array_shape(rhs, "compare")?,
        );
        let plan = super::broadcast_shapes(&l.dims, &r.dims, broadcast_dimensions)
            .map_err(|m| super::err(format!("compare: {m}")))?;
        let lhs = self.broadcast_to(lhs, &plan.lhs_map, &plan.out)?;
        let rhs = self.broadcast_to(rhs, &plan.rhs_map, &plan.out)?;
        let attrs = Attrs {
            direction: Some(direction),
            comparison_type: ty,
            ..Default::default()
        };
        self.add_instruction(Opcode::Compare, &[lhs, rhs], attrs, None)
    }

    pub fn eq(&mut self, l: XlaOp, r: XlaOp) -> BResult<XlaOp> {
        self.compare(l, r, ComparisonDirection::Eq, None, &[])
    }
    pub fn ne(&mut self, l: XlaOp, r: XlaOp) -> BResult<XlaOp> {
        self.compare(l, r, ComparisonDirection::Ne, None, &[])
    }
    pub fn ge(&mut self, l: XlaOp, r: XlaOp) -> BResult<XlaOp> {
        self.compare(l, r, ComparisonDirection::Ge, None, &[])
    }
    pub fn gt(&mut self, l: XlaOp, r: XlaOp) -> BResult<XlaOp> {
        self.compare(l, r, ComparisonDirection::Gt, None, &[])
    }
    pub fn le(&mut self, l: XlaOp, r: XlaOp) -> BResult<XlaOp> {
        self.compare(l, r, ComparisonDirection::Le, None, &[])
    }
    pub fn lt(&mut self, l: XlaOp, r: XlaOp) -> BResult<XlaOp> {
        self.compare(l, r, ComparisonDirection::Lt, None, &[])
    }
    /// Comparison under the total order -NaN < -Inf < -Finite < -0 < +0 < +Finite < +Inf < +NaN.
    pub fn compare_total_order(
        &mut self,
        l: XlaOp,
        r: XlaOp,
        d: ComparisonDirection,
    ) -> BResult<XlaOp> {
        self.compare(l, r, d, Some(ComparisonType::TotalOrder), &[])
    }

    /// `ConvertElementType`.
    pub fn convert_element_type(&mut self, x: XlaOp, ty: ElementType) -> BResult<XlaOp> {
        let s = self.array_shape(x, "convert")?;
        self.add_instruction(
            Opcode::Convert,
            &[x],
            Attrs::default(),
            Some(Shape::Array(s.with_type(ty))),
        )
    }

    /// `BitcastConvertType`: same bits, new type; a narrower target adds a minor dimension,
    /// a wider one drops the minor dimension (which must be the width ratio).
    pub fn bitcast_convert_type(&mut self, x: XlaOp, ty: ElementType) -> BResult<XlaOp> {
        let s = self.array_shape(x, "bitcast-convert")?;
        let (from, to) = (s.ty.bits(), ty.bits());
        let mut out = s.with_type(ty);
        if to < from && to > 0 {
            out.dims.push((from / to) as i64);
            out.dynamic.push(false);
        } else if to > from {
            out.dims.pop();
            out.dynamic.pop();
        }
        out.layout = None;
        self.add_instruction(
            Opcode::BitcastConvert,
            &[x],
            Attrs::default(),
            Some(Shape::Array(out)),
        )
    }

    /// `ReducePrecision` to a float format with the given exponent and mantissa bits.
    pub fn reduce_precision(
        &mut self,
        x: XlaOp,
        exponent_bits: i64,
        mantissa_bits: i64,
    ) -> BResult<XlaOp> {
        let attrs = Attrs {
            exponent_bits: Some(exponent_bits),
            mantissa_bits: Some(mantissa_bits),
            ..Default::default()
        };
        self.add_instruction(Opcode::ReducePrecision, &[x], attrs, None)
    }

    /// `Clamp(min, operand, max)`; `min`/`max` may be scalars.
    pub fn clamp(&mut self, min: XlaOp, x: XlaOp, max: XlaOp) -> BResult<XlaOp> {
        self.add_instruction(Opcode::Clamp, &[min, x, max], Attrs::default(), None)
    }

    /// `Select(pred, on_true, on_false)`; `pred` may be a scalar.
    pub fn select(&mut self, pred: XlaOp, on_true: XlaOp, on_false: XlaOp) -> BResult<XlaOp> {
        self.add_instruction(
            Opcode::Select,
            &[pred, on_true, on_false],
            Attrs::default(),
            None,
        )
    }
}
