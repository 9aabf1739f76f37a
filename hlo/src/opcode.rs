//! The opcode table: one line per HLO opcode with its text name, operand count and class.
//! Names, arity checks and parsing all derive from this table.

use std::fmt;

/// How many operands an opcode takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arity {
    /// Exactly `n`.
    Fixed(usize),
    /// At least `n`.
    AtLeast(usize),
    /// Between `lo` and `hi` inclusive.
    Range(usize, usize),
}

impl Arity {
    pub fn accepts(self, n: usize) -> bool {
        match self {
            Arity::Fixed(k) => n == k,
            Arity::AtLeast(k) => n >= k,
            Arity::Range(lo, hi) => (lo..=hi).contains(&n),
        }
    }
}

impl fmt::Display for Arity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arity::Fixed(k) => write!(f, "exactly {k}"),
            Arity::AtLeast(k) => write!(f, "at least {k}"),
            Arity::Range(lo, hi) => write!(f, "{lo} to {hi}"),
        }
    }
}

/// Broad class of an opcode, used by shape inference and the evaluator's dispatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpClass {
    /// Elementwise, one operand, same shape out.
    Unary,
    /// Elementwise, two operands of the same shape.
    Binary,
    /// Everything else: each has its own rule.
    Other,
}

macro_rules! opcodes {
    ($( $v:ident => $name:literal, $arity:expr, $class:ident; )*) => {
        /// An HLO opcode.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Opcode { $( $v, )* }

        impl Opcode {
            /// Every opcode, in table order.
            pub const ALL: &'static [Opcode] = &[ $( Opcode::$v, )* ];

            /// The opcode's name in HLO text.
            pub fn name(self) -> &'static str {
                match self { $( Opcode::$v => $name, )* }
            }

            /// How many operands the opcode takes.
            pub fn arity(self) -> Arity {
                use Arity::*;
                match self { $( Opcode::$v => $arity, )* }
            }

            /// The opcode's class.
            pub fn class(self) -> OpClass {
                match self { $( Opcode::$v => OpClass::$class, )* }
            }

            /// Looks an opcode up by its HLO text name.
            pub fn from_name(s: &str) -> Option<Opcode> {
                match s { $( $name => Some(Opcode::$v), )* _ => None }
            }
        }
    };
}

opcodes! {
    // Elementwise unary.
    Abs => "abs", Fixed(1), Unary;
    Cbrt => "cbrt", Fixed(1), Unary;
    Ceil => "ceil", Fixed(1), Unary;
    Clz => "count-leading-zeros", Fixed(1), Unary;
    Cos => "cosine", Fixed(1), Unary;
    Erf => "erf", Fixed(1), Unary;
    Exp => "exponential", Fixed(1), Unary;
    Expm1 => "exponential-minus-one", Fixed(1), Unary;
    Floor => "floor", Fixed(1), Unary;
    Imag => "imag", Fixed(1), Unary;
    IsFinite => "is-finite", Fixed(1), Unary;
    Log => "log", Fixed(1), Unary;
    Log1p => "log-plus-one", Fixed(1), Unary;
    Logistic => "logistic", Fixed(1), Unary;
    Negate => "negate", Fixed(1), Unary;
    Not => "not", Fixed(1), Unary;
    PopCnt => "popcnt", Fixed(1), Unary;
    Real => "real", Fixed(1), Unary;
    RoundAfz => "round-nearest-afz", Fixed(1), Unary;
    RoundEven => "round-nearest-even", Fixed(1), Unary;
    Rsqrt => "rsqrt", Fixed(1), Unary;
    Sign => "sign", Fixed(1), Unary;
    Sin => "sine", Fixed(1), Unary;
    Sqrt => "sqrt", Fixed(1), Unary;
    Tan => "tan", Fixed(1), Unary;
    Tanh => "tanh", Fixed(1), Unary;
    // Elementwise binary.
    Add => "add", Fixed(2), Binary;
    And => "and", Fixed(2), Binary;
    Atan2 => "atan2", Fixed(2), Binary;
    Complex => "complex", Fixed(2), Binary;
    Divide => "divide", Fixed(2), Binary;
    Maximum => "maximum", Fixed(2), Binary;
    Minimum => "minimum", Fixed(2), Binary;
    Multiply => "multiply", Fixed(2), Binary;
    Or => "or", Fixed(2), Binary;
    Power => "power", Fixed(2), Binary;
    Remainder => "remainder", Fixed(2), Binary;
    ShiftLeft => "shift-left", Fixed(2), Binary;
    ShiftRightArithmetic => "shift-right-arithmetic", Fixed(2), Binary;
    ShiftRightLogical => "shift-right-logical", Fixed(2), Binary;
    Subtract => "subtract", Fixed(2), Binary;
    Xor => "xor", Fixed(2), Binary;
    // Everything else.
    AddDependency => "add-dependency", Fixed(2), Other;
    AfterAll => "after-all", AtLeast(0), Other;
    AllGather => "all-gather", AtLeast(1), Other;
    AllGatherDone => "all-gather-done", Fixed(1), Other;
    AllGatherStart => "all-gather-start", AtLeast(1), Other;
    AllReduce => "all-reduce", AtLeast(1), Other;
    AllReduceDone => "all-reduce-done", Fixed(1), Other;
    AllReduceStart => "all-reduce-start", AtLeast(1), Other;
    AllToAll => "all-to-all", AtLeast(1), Other;
    AsyncDone => "async-done", Fixed(1), Other;
    AsyncStart => "async-start", AtLeast(0), Other;
    AsyncUpdate => "async-update", Fixed(1), Other;
    BatchNormGrad => "batch-norm-grad", Fixed(5), Other;
    BatchNormInference => "batch-norm-inference", Fixed(5), Other;
    BatchNormTraining => "batch-norm-training", Fixed(3), Other;
    Bitcast => "bitcast", Fixed(1), Other;
    BitcastConvert => "bitcast-convert", Fixed(1), Other;
    Broadcast => "broadcast", Fixed(1), Other;
    Call => "call", AtLeast(0), Other;
    Cholesky => "cholesky", Fixed(1), Other;
    Clamp => "clamp", Fixed(3), Other;
    CollectiveBroadcast => "collective-broadcast", AtLeast(1), Other;
    CollectivePermute => "collective-permute", AtLeast(1), Other;
    CollectivePermuteDone => "collective-permute-done", Fixed(1), Other;
    CollectivePermuteStart => "collective-permute-start", AtLeast(1), Other;
    Compare => "compare", Fixed(2), Other;
    Concatenate => "concatenate", AtLeast(1), Other;
    Conditional => "conditional", AtLeast(2), Other;
    Constant => "constant", Fixed(0), Other;
    Convert => "convert", Fixed(1), Other;
    Convolution => "convolution", Fixed(2), Other;
    Copy => "copy", Fixed(1), Other;
    CopyDone => "copy-done", Fixed(1), Other;
    CopyStart => "copy-start", Fixed(1), Other;
    CustomCall => "custom-call", AtLeast(0), Other;
    Domain => "domain", Fixed(1), Other;
    Dot => "dot", Fixed(2), Other;
    DynamicReshape => "dynamic-reshape", AtLeast(1), Other;
    DynamicSlice => "dynamic-slice", AtLeast(1), Other;
    DynamicUpdateSlice => "dynamic-update-slice", AtLeast(2), Other;
    Fft => "fft", Fixed(1), Other;
    Fusion => "fusion", AtLeast(0), Other;
    Gather => "gather", Fixed(2), Other;
    GetDimensionSize => "get-dimension-size", Fixed(1), Other;
    GetTupleElement => "get-tuple-element", Fixed(1), Other;
    Infeed => "infeed", Fixed(1), Other;
    Iota => "iota", Fixed(0), Other;
    Map => "map", AtLeast(1), Other;
    OptimizationBarrier => "opt-barrier", Fixed(1), Other;
    Outfeed => "outfeed", Fixed(2), Other;
    Pad => "pad", Fixed(2), Other;
    Parameter => "parameter", Fixed(0), Other;
    PartitionId => "partition-id", Fixed(0), Other;
    RaggedAllToAll => "ragged-all-to-all", Fixed(6), Other;
    Recv => "recv", Fixed(1), Other;
    RecvDone => "recv-done", Fixed(1), Other;
    Reduce => "reduce", AtLeast(2), Other;
    ReducePrecision => "reduce-precision", Fixed(1), Other;
    ReduceScatter => "reduce-scatter", AtLeast(1), Other;
    ReduceWindow => "reduce-window", AtLeast(2), Other;
    ReplicaId => "replica-id", Fixed(0), Other;
    Reshape => "reshape", Fixed(1), Other;
    Reverse => "reverse", Fixed(1), Other;
    Rng => "rng", Range(1, 2), Other;
    RngBitGenerator => "rng-bit-generator", Fixed(1), Other;
    RngGetAndUpdateState => "rng-get-and-update-state", Fixed(0), Other;
    Scatter => "scatter", AtLeast(3), Other;
    Select => "select", Fixed(3), Other;
    SelectAndScatter => "select-and-scatter", Fixed(3), Other;
    Send => "send", Fixed(2), Other;
    SendDone => "send-done", Fixed(1), Other;
    SetDimensionSize => "set-dimension-size", Fixed(2), Other;
    Slice => "slice", Fixed(1), Other;
    Sort => "sort", AtLeast(1), Other;
    StochasticConvert => "stochastic-convert", Fixed(2), Other;
    TopK => "topk", Fixed(1), Other;
    Transpose => "transpose", Fixed(1), Other;
    TriangularSolve => "triangular-solve", Fixed(2), Other;
    Tuple => "tuple", AtLeast(0), Other;
    While => "while", Fixed(1), Other;
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for &op in Opcode::ALL {
            assert_eq!(Opcode::from_name(op.name()), Some(op));
            assert!(seen.insert(op.name()), "duplicate name {}", op.name());
        }
    }
}
