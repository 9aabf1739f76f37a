//! Typed instruction attributes.
//!
//! Every attribute with a meaning for some op is a typed field of [`Attrs`]; the parser fills
//! them from text, the builder sets them, the verifier checks them per opcode, the printer writes
//! them in one canonical order. Attributes without an effect on values (`metadata`,
//! `frontend_attributes`, `backend_config`, `sharding`, ...) are kept verbatim in
//! [`Attrs::extra`] so that printing round-trips.
//!
//! Dimension numbers are stored exactly as written (no defaults filled in); the verifier checks
//! their ranges against operand ranks.

use crate::ir::{CompId, InstId};
use crate::literal::Literal;
use crate::shape::Shape;

/// One dimension of a `slice={[start:limit:stride], ...}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SliceDim {
    pub start: i64,
    pub limit: i64,
    pub stride: i64,
}

/// One dimension of a padding config `lo_hi[_interior]` (`padding=0_0x1_2_1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PadDim {
    pub lo: i64,
    pub hi: i64,
    pub interior: i64,
}

/// One dimension of a `window={size=.. stride=.. pad=.. lhs_dilate=.. rhs_dilate=.. rhs_reversal=..}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WindowDim {
    pub size: i64,
    pub stride: i64,
    pub pad_lo: i64,
    pub pad_hi: i64,
    /// `lhs_dilate` (base dilation).
    pub lhs_dilate: i64,
    /// `rhs_dilate` (window dilation).
    pub rhs_dilate: i64,
    pub reversal: bool,
}

impl WindowDim {
    /// A window dimension of `size` with unit stride/dilation and no padding.
    pub fn of_size(size: i64) -> WindowDim {
        WindowDim {
            size,
            stride: 1,
            pad_lo: 0,
            pad_hi: 0,
            lhs_dilate: 1,
            rhs_dilate: 1,
            reversal: false,
        }
    }
}

/// Convolution dimension numbers, as `dim_labels=b01f_01io->b01f` describes them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ConvDims {
    pub input_batch: i64,
    pub input_feature: i64,
    pub input_spatial: Vec<i64>,
    pub kernel_input_feature: i64,
    pub kernel_output_feature: i64,
    pub kernel_spatial: Vec<i64>,
    pub output_batch: i64,
    pub output_feature: i64,
    pub output_spatial: Vec<i64>,
}

/// Replica groups: the explicit list form `{{0,1},{2,3}}` or the iota form
/// `[G,S]<=[d0,d1,...]T(perm)` (reshape `iota(prod(dims))` to `reshape_dims`, transpose by
/// `perm`, then reshape to `[G,S]`: G groups of S members).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ReplicaGroups {
    List(Vec<Vec<i64>>),
    Iota {
        group_dims: Vec<i64>,
        reshape_dims: Vec<i64>,
        transpose: Option<Vec<i64>>,
    },
    /// `mesh['x'=2,'y'=4] {'y'}`: the devices of an iota mesh (device id = row-major index
    /// over the axes) grouped along the listed axes or sub-axes; devices agreeing on every
    /// other coordinate form one group, ordered row-major over the listed axes in the order
    /// given; groups are listed in order of their lowest device.
    Mesh {
        /// Axis names and sizes, major to minor.
        axes: Vec<(String, i64)>,
        /// The axes (or sub-axes) a group spans.
        refs: Vec<MeshAxisRef>,
    },
}

/// One axis of a mesh replica-group list: a whole axis, or its sub-axis `'x':(pre)size`
/// (axis `x` of size `n` seen as `[pre, size, n / (pre·size)]`, major to minor).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MeshAxisRef {
    /// Index into the mesh's axes.
    pub axis: usize,
    /// `(pre-size, size)` of a sub-axis.
    pub sub: Option<(i64, i64)>,
}

impl ReplicaGroups {
    /// Why [`Self::expand`] refuses this list (what each form requires).
    pub fn malformed_reason(&self) -> &'static str {
        match self {
            ReplicaGroups::List(_) => "replica_groups list is malformed",
            ReplicaGroups::Iota { .. } => {
                "replica_groups in iota form [G,S]<=[dims]T(perm) is malformed (sizes must \
                 multiply to G*S and the transpose must be a permutation)"
            }
            ReplicaGroups::Mesh { .. } => {
                "replica_groups in mesh form mesh[axes] {axes} is malformed (sizes must be at \
                 least 1, a sub-axis (pre)size must divide its axis, listed axes must not \
                 overlap, at most 2^24 devices)"
            }
        }
    }

    /// The explicit groups. `None` if the iota form is malformed (product mismatch, bad perm).
    pub fn expand(&self) -> Option<Vec<Vec<i64>>> {
        match self {
            ReplicaGroups::List(g) => Some(g.clone()),
            ReplicaGroups::Iota {
                group_dims,
                reshape_dims,
                transpose,
            } => {
                if group_dims.len() != 2 || group_dims.iter().chain(reshape_dims).any(|&d| d < 0) {
                    return None;
                }
                let total: i64 = reshape_dims
                    .iter()
                    .try_fold(1i64, |a, &d| a.checked_mul(d))?;
                if total != group_dims[0].checked_mul(group_dims[1])? || total > 1 << 24 {
                    return None;
                }
                let rank = reshape_dims.len();
                let perm: Vec<usize> = match transpose {
                    Some(p) => p.iter().map(|&x| x as usize).collect(),
                    None => (0..rank).collect(),
                };
                let mut sorted = perm.clone();
                sorted.sort_unstable();
                if sorted != (0..rank).collect::<Vec<_>>() {
                    return None;
                }
                // Element at transposed index j has source index with coords permuted.
                let tdims: Vec<i64> = perm.iter().map(|&p| reshape_dims[p]).collect();
                let rd: Vec<usize> = reshape_dims.iter().map(|&d| d as usize).collect();
                let src_strides: Vec<i64> = crate::shape::strides(&rd)
                    .into_iter()
                    .map(|s| s as i64)
                    .collect();
                let mut flat = Vec::with_capacity(total as usize);
                let mut idx = vec![0i64; rank];
                for _ in 0..total {
                    let v: i64 = (0..rank).map(|j| idx[j] * src_strides[perm[j]]).sum();
                    flat.push(v);
                    for d in (0..rank).rev() {
                        idx[d] += 1;
                        if idx[d] < tdims[d] {
                            break;
                        }
                        idx[d] = 0;
                    }
                }
                Some(
                    flat.chunks(group_dims[1].max(1) as usize)
                        .map(|c| c.to_vec())
                        .collect(),
                )
            }
            ReplicaGroups::Mesh { axes, refs } => mesh_groups(axes, refs),
        }
    }
}

/// The groups of a [`ReplicaGroups::Mesh`]; `None` if malformed (a size below 1, a sub-axis
/// that does not divide its axis, axes listed twice or overlapping, more than 2^24 devices).
fn mesh_groups(axes: &[(String, i64)], refs: &[MeshAxisRef]) -> Option<Vec<Vec<i64>>> {
    if refs.is_empty() || axes.iter().any(|a| a.1 < 1) {
        return None;
    }
    let total = axes.iter().try_fold(1i64, |a, x| a.checked_mul(x.1))?;
    if total > 1 << 24 {
        return None;
    }
    // Per ref: (axis, stride within the axis index, size).
    let mut parts = Vec::with_capacity(refs.len());
    for r in refs {
        let n = axes.get(r.axis)?.1;
        let (pre, size) = r.sub.unwrap_or((1, n));
        if pre < 1 || size < 1 || n % pre.checked_mul(size)? != 0 {
            return None;
        }
        parts.push((r.axis, n / (pre * size), size));
    }
    let group_len = parts.iter().try_fold(1i64, |a, p| a.checked_mul(p.2))?;
    let rank = axes.len();
    let mut groups: Vec<Vec<i64>> = Vec::new();
    // Group key (the device with every listed coordinate at 0) -> group index.
    let mut index = std::collections::BTreeMap::new();
    for d in 0..total {
        // Mesh coordinates, row-major.
        let mut coords = vec![0i64; rank];
        let mut rest = d;
        for i in (0..rank).rev() {
            coords[i] = rest % axes[i].1;
            rest /= axes[i].1;
        }
        let mut key_coords = coords.clone();
        let mut pos = 0i64;
        for &(axis, stride, size) in &parts {
            let b = (coords[axis] / stride) % size;
            key_coords[axis] -= b * stride;
            pos = pos * size + b;
        }
        let key = key_coords
            .iter()
            .zip(axes)
            .fold(0i64, |a, (c, x)| a * x.1 + c);
        let g = *index.entry(key).or_insert_with(|| {
            groups.push(vec![-1; group_len as usize]);
            groups.len() - 1
        });
        let slot = &mut groups[g][pos as usize];
        if *slot != -1 {
            // Two devices at one position: the listed axes overlap.
            return None;
        }
        *slot = d;
    }
    if groups.iter().flatten().any(|&x| x < 0) {
        return None;
    }
    Some(groups)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ComparisonDirection {
    Eq,
    Ne,
    Ge,
    Gt,
    Le,
    Lt,
}

impl ComparisonDirection {
    pub const ALL: [ComparisonDirection; 6] =
        [Self::Eq, Self::Ne, Self::Ge, Self::Gt, Self::Le, Self::Lt];
    pub fn name(self) -> &'static str {
        match self {
            Self::Eq => "EQ",
            Self::Ne => "NE",
            Self::Ge => "GE",
            Self::Gt => "GT",
            Self::Le => "LE",
            Self::Lt => "LT",
        }
    }
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.name() == s)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ComparisonType {
    Float,
    TotalOrder,
    Signed,
    Unsigned,
}

impl ComparisonType {
    pub const ALL: [ComparisonType; 4] =
        [Self::Float, Self::TotalOrder, Self::Signed, Self::Unsigned];
    pub fn name(self) -> &'static str {
        match self {
            Self::Float => "FLOAT",
            Self::TotalOrder => "TOTALORDER",
            Self::Signed => "SIGNED",
            Self::Unsigned => "UNSIGNED",
        }
    }
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.name() == s)
    }
}

/// Operand precision of dot/convolution (`operand_precision={default,high}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Precision {
    Default,
    High,
    Highest,
}

impl Precision {
    pub const ALL: [Precision; 3] = [Self::Default, Self::High, Self::Highest];
    pub fn name(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::High => "high",
            Self::Highest => "highest",
        }
    }
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|d| d.name().eq_ignore_ascii_case(s))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FftType {
    Fft,
    Ifft,
    Rfft,
    Irfft,
}

impl FftType {
    pub const ALL: [FftType; 4] = [Self::Fft, Self::Ifft, Self::Rfft, Self::Irfft];
    pub fn name(self) -> &'static str {
        match self {
            Self::Fft => "FFT",
            Self::Ifft => "IFFT",
            Self::Rfft => "RFFT",
            Self::Irfft => "IRFFT",
        }
    }
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.name() == s)
    }
}

/// `distribution=` of `rng`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RngDistribution {
    Uniform,
    Normal,
}

impl RngDistribution {
    pub const ALL: [RngDistribution; 2] = [Self::Uniform, Self::Normal];
    pub fn name(self) -> &'static str {
        match self {
            Self::Uniform => "rng_uniform",
            Self::Normal => "rng_normal",
        }
    }
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.name() == s)
    }
}

/// `algorithm=` of `rng-bit-generator`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RngAlgorithm {
    Default,
    ThreeFry,
    Philox,
}

impl RngAlgorithm {
    pub const ALL: [RngAlgorithm; 3] = [Self::Default, Self::ThreeFry, Self::Philox];
    pub fn name(self) -> &'static str {
        match self {
            Self::Default => "rng_default",
            Self::ThreeFry => "rng_three_fry",
            Self::Philox => "rng_philox",
        }
    }
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.name() == s)
    }
}

/// `transpose_a=` of `triangular-solve`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TransposeKind {
    NoTranspose,
    Transpose,
    Adjoint,
}

impl TransposeKind {
    pub const ALL: [TransposeKind; 3] = [Self::NoTranspose, Self::Transpose, Self::Adjoint];
    pub fn name(self) -> &'static str {
        match self {
            Self::NoTranspose => "NO_TRANSPOSE",
            Self::Transpose => "TRANSPOSE",
            Self::Adjoint => "ADJOINT",
        }
    }
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.name() == s)
    }
}

/// `triangular_solve_options={left_side=.. lower=.. unit_diagonal=.. transpose_a=..}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TriangularSolveOptions {
    pub left_side: bool,
    pub lower: bool,
    pub unit_diagonal: bool,
    pub transpose_a: TransposeKind,
}

/// All typed attributes an instruction can carry. Unset fields are `None`/empty.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attrs {
    // Payloads written inside the operand parentheses.
    /// `parameter(N)`.
    pub parameter_number: Option<i64>,
    /// `constant(...)`.
    pub literal: Option<Box<Literal>>,

    // Called computations.
    pub to_apply: Option<CompId>,
    pub calls: Option<CompId>,
    pub condition: Option<CompId>,
    pub body: Option<CompId>,
    pub true_computation: Option<CompId>,
    pub false_computation: Option<CompId>,
    pub branch_computations: Option<Vec<CompId>>,
    /// `select=` of select-and-scatter.
    pub select: Option<CompId>,
    /// `scatter=` of select-and-scatter.
    pub scatter: Option<CompId>,
    /// `called_computations={..}` of custom-call.
    pub called_computations: Option<Vec<CompId>>,

    // Shape manipulation.
    pub dimensions: Option<Vec<i64>>,
    pub iota_dimension: Option<i64>,
    /// `index=` of get-tuple-element.
    pub index: Option<i64>,
    pub slice: Option<Vec<SliceDim>>,
    pub dynamic_slice_sizes: Option<Vec<i64>>,
    /// `padding=` of pad.
    pub padding: Option<Vec<PadDim>>,
    pub window: Option<Vec<WindowDim>>,

    // Convolution and dot.
    pub dim_labels: Option<ConvDims>,
    pub feature_group_count: Option<i64>,
    pub batch_group_count: Option<i64>,
    pub lhs_batch_dims: Option<Vec<i64>>,
    pub rhs_batch_dims: Option<Vec<i64>>,
    pub lhs_contracting_dims: Option<Vec<i64>>,
    pub rhs_contracting_dims: Option<Vec<i64>>,
    pub operand_precision: Option<Vec<Precision>>,
    /// `algorithm=` of dot/convolution (`dot_bf16_bf16_f32`, ...), verbatim.
    pub dot_algorithm: Option<String>,

    // Gather and scatter.
    pub offset_dims: Option<Vec<i64>>,
    pub collapsed_slice_dims: Option<Vec<i64>>,
    pub start_index_map: Option<Vec<i64>>,
    pub operand_batching_dims: Option<Vec<i64>>,
    pub start_indices_batching_dims: Option<Vec<i64>>,
    pub slice_sizes: Option<Vec<i64>>,
    pub update_window_dims: Option<Vec<i64>>,
    pub inserted_window_dims: Option<Vec<i64>>,
    pub scatter_dims_to_operand_dims: Option<Vec<i64>>,
    pub input_batching_dims: Option<Vec<i64>>,
    pub scatter_indices_batching_dims: Option<Vec<i64>>,
    pub index_vector_dim: Option<i64>,
    pub indices_are_sorted: Option<bool>,
    pub unique_indices: Option<bool>,

    // Collectives.
    pub replica_groups: Option<ReplicaGroups>,
    pub source_target_pairs: Option<Vec<(i64, i64)>>,
    pub channel_id: Option<i64>,
    pub use_global_device_ids: Option<bool>,
    pub constrain_layout: Option<bool>,

    // Comparison, sort, top-k.
    pub direction: Option<ComparisonDirection>,
    /// `type=` of compare.
    pub comparison_type: Option<ComparisonType>,
    pub is_stable: Option<bool>,
    pub largest: Option<bool>,
    pub k: Option<i64>,

    // Numerics.
    pub exponent_bits: Option<i64>,
    pub mantissa_bits: Option<i64>,
    pub fft_type: Option<FftType>,
    pub fft_length: Option<Vec<i64>>,
    pub distribution: Option<RngDistribution>,
    /// `algorithm=` of rng-bit-generator.
    pub rng_algorithm: Option<RngAlgorithm>,
    pub epsilon: Option<f32>,
    pub feature_index: Option<i64>,
    pub triangular_solve_options: Option<TriangularSolveOptions>,
    /// `lower=` of cholesky.
    pub lower: Option<bool>,

    // Side effects and host interaction.
    pub custom_call_target: Option<String>,
    pub custom_call_has_side_effect: Option<bool>,
    /// `api_version=` of custom-call, verbatim (`API_VERSION_TYPED_FFI`, ...).
    pub api_version: Option<String>,
    pub opaque: Option<String>,
    pub outfeed_shape: Option<Shape>,
    pub infeed_config: Option<String>,
    pub outfeed_config: Option<String>,
    pub is_host_transfer: Option<bool>,

    // Fusion and composite calls.
    /// `kind=` of fusion (`kLoop`, `kInput`, `kOutput`, `kCustom`).
    pub fusion_kind: Option<String>,
    pub is_composite: Option<bool>,
    /// `composite.name=` (string contents, unquoted).
    pub composite_name: Option<String>,
    /// `composite.attributes=` verbatim (a brace-delimited dictionary).
    pub composite_attributes: Option<String>,
    pub composite_version: Option<i64>,

    /// `control-predecessors={...}`.
    pub control_predecessors: Vec<InstId>,
    /// Attributes with no effect on values, kept verbatim as `(key, value text)` in source order.
    pub extra: Vec<(String, String)>,
}

/// An instruction's attributes, stored only when some are set: most instructions (add,
/// multiply, get-tuple-element of a plain tuple, ...) carry none and then cost one pointer
/// instead of a whole [`Attrs`] (about 1.3 KB). Reads see an empty [`Attrs`]; the first
/// mutable access allocates.
#[derive(Clone, Default)]
pub struct AttrBox(Option<Box<Attrs>>);

impl AttrBox {
    /// Boxes `a` (nothing is allocated if every attribute is unset).
    pub fn new(a: Attrs) -> AttrBox {
        if a == Attrs::default() {
            AttrBox(None)
        } else {
            AttrBox(Some(Box::new(a)))
        }
    }
    /// The attributes by value.
    pub fn into_inner(self) -> Attrs {
        self.0.map(|b| *b).unwrap_or_default()
    }
}

fn no_attrs() -> &'static Attrs {
    static EMPTY: std::sync::OnceLock<Attrs> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Attrs::default)
}

impl From<Attrs> for AttrBox {
    fn from(a: Attrs) -> AttrBox {
        AttrBox::new(a)
    }
}

impl std::ops::Deref for AttrBox {
    type Target = Attrs;
    fn deref(&self) -> &Attrs {
        match &self.0 {
            Some(b) => b,
            None => no_attrs(),
        }
    }
}

impl std::ops::DerefMut for AttrBox {
    fn deref_mut(&mut self) -> &mut Attrs {
        self.0.get_or_insert_with(Default::default)
    }
}

impl PartialEq for AttrBox {
    fn eq(&self, other: &AttrBox) -> bool {
        **self == **other
    }
}

impl std::fmt::Debug for AttrBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl Attrs {
    /// Every called computation, in a fixed order (to_apply, calls, condition, body,
    /// true/false computations, branches, select, scatter, custom-call computations).
    pub fn called_computations(&self) -> Vec<CompId> {
        let mut v = Vec::new();
        let singles = [
            self.to_apply,
            self.calls,
            self.condition,
            self.body,
            self.true_computation,
            self.false_computation,
        ];
        v.extend(singles.into_iter().flatten());
        v.extend(self.branch_computations.iter().flatten().copied());
        v.extend([self.select, self.scatter].into_iter().flatten());
        v.extend(self.called_computations.iter().flatten().copied());
        v
    }

    /// Rewrites every called-computation handle with `f` (used when computations move
    /// between modules, e.g. by the builder).
    pub fn remap_computations(&mut self, mut f: impl FnMut(CompId) -> CompId) {
        for c in [
            &mut self.to_apply,
            &mut self.calls,
            &mut self.condition,
            &mut self.body,
            &mut self.true_computation,
            &mut self.false_computation,
            &mut self.select,
            &mut self.scatter,
        ]
        .into_iter()
        .flatten()
        {
            *c = f(*c);
        }
        for list in [&mut self.branch_computations, &mut self.called_computations]
            .into_iter()
            .flatten()
        {
            for c in list.iter_mut() {
                *c = f(*c);
            }
        }
    }
}

#[cfg(test)]
mod mesh_group_tests {
    use super::*;

    fn mesh(axes: &[(&str, i64)], refs: &[(usize, Option<(i64, i64)>)]) -> Option<Vec<Vec<i64>>> {
        ReplicaGroups::Mesh {
            axes: axes.iter().map(|(n, s)| (n.to_string(), *s)).collect(),
            refs: refs
                .iter()
                .map(|&(axis, sub)| MeshAxisRef { axis, sub })
                .collect(),
        }
        .expand()
    }

    #[test]
    fn mesh_groups_span_the_listed_axes() {
        let xy = [("x", 2), ("y", 2)];
        assert_eq!(
            mesh(&xy, &[(0, None)]).unwrap(),
            vec![vec![0, 2], vec![1, 3]]
        );
        assert_eq!(
            mesh(&xy, &[(1, None)]).unwrap(),
            vec![vec![0, 1], vec![2, 3]]
        );
        // Both axes, in the order listed: y major.
        assert_eq!(
            mesh(&xy, &[(1, None), (0, None)]).unwrap(),
            vec![vec![0, 2, 1, 3]]
        );
        // The 2x4 data x model mesh: groups over 'model' and over 'data'.
        let dm = [("data", 2), ("model", 4)];
        assert_eq!(
            mesh(&dm, &[(1, None)]).unwrap(),
            vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]
        );
        assert_eq!(
            mesh(&dm, &[(0, None)]).unwrap(),
            vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]
        );
        // Sub-axes of an axis of 8 seen as [pre, size, rest]: 'x':(1)2 is the major half.
        let x8 = [("x", 8)];
        assert_eq!(
            mesh(&x8, &[(0, Some((1, 2)))]).unwrap(),
            vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]
        );
        assert_eq!(
            mesh(&x8, &[(0, Some((2, 4)))]).unwrap(),
            vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]
        );
        // Malformed: a sub-axis that does not divide, an axis listed twice.
        assert!(mesh(&x8, &[(0, Some((3, 2)))]).is_none());
        assert!(mesh(&xy, &[(0, None), (0, None)]).is_none());
    }
}
