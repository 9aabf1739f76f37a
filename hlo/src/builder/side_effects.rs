//! Replica collectives, host and device transfers, and random number generation.

use super::{err, BResult, XlaBuilder, XlaComputation, XlaOp};
use crate::attrs::{Attrs, ReplicaGroups, RngAlgorithm, RngDistribution};
use crate::opcode::Opcode;
use crate::shape::{ArrayShape, Shape};
use crate::types::ElementType;

fn groups(g: &[Vec<i64>]) -> Option<ReplicaGroups> {
    Some(ReplicaGroups::List(g.to_vec()))
}

impl XlaBuilder {
    /// `AllReduce(operand, computation, replica_groups)`; `operand` may be a tuple-producing
    /// list of several operands.
    pub fn all_reduce(
        &mut self,
        operands: &[XlaOp],
        computation: &XlaComputation,
        replica_groups: &[Vec<i64>],
    ) -> BResult<XlaOp> {
        let c = self.embed(computation);
        let attrs = Attrs {
            to_apply: Some(c),
            replica_groups: groups(replica_groups),
            ..Default::default()
        };
        self.add_instruction(Opcode::AllReduce, operands, attrs, None)
    }

    /// The older `CrossReplicaSum(operand, replica_groups)`: an all-reduce with addition.
    pub fn cross_replica_sum(
        &mut self,
        operand: XlaOp,
        replica_groups: &[Vec<i64>],
    ) -> BResult<XlaOp> {
        let ty = self.array_shape(operand, "cross-replica-sum")?.ty;
        let mut sb = XlaBuilder::new("sum");
        let a = sb.parameter(0, Shape::scalar(ty), "")?;
        let b = sb.parameter(1, Shape::scalar(ty), "")?;
        let s = sb.add(a, b)?;
        let sum = sb.build(s)?;
        self.all_reduce(&[operand], &sum, replica_groups)
    }

    /// `AllGather(operand, all_gather_dimension, shard_count, replica_groups)`.
    pub fn all_gather(
        &mut self,
        operand: XlaOp,
        dimension: i64,
        replica_groups: &[Vec<i64>],
    ) -> BResult<XlaOp> {
        let mut s = self.array_shape(operand, "all-gather")?;
        let n = self.group_size(replica_groups);
        let d = usize::try_from(dimension).ok().filter(|&d| d < s.rank());
        let d = d.ok_or_else(|| {
            err(format!(
                "all-gather: dimension {dimension} out of range for {s}"
            ))
        })?;
        s.dims[d] *= n;
        let attrs = Attrs {
            dimensions: Some(vec![dimension]),
            replica_groups: groups(replica_groups),
            ..Default::default()
        };
        self.add_instruction(Opcode::AllGather, &[operand], attrs, Some(Shape::Array(s)))
    }

    /// `ReduceScatter(operand, computation, scatter_dimension, shard_count, replica_groups)`.
    pub fn reduce_scatter(
        &mut self,
        operand: XlaOp,
        computation: &XlaComputation,
        dimension: i64,
        replica_groups: &[Vec<i64>],
    ) -> BResult<XlaOp> {
        let mut s = self.array_shape(operand, "reduce-scatter")?;
        let n = self.group_size(replica_groups);
        let d = usize::try_from(dimension).ok().filter(|&d| d < s.rank());
        let d = d.ok_or_else(|| {
            err(format!(
                "reduce-scatter: dimension {dimension} out of range for {s}"
            ))
        })?;
        if n == 0 || s.dims[d] % n != 0 {
            return Err(err(format!(
                "reduce-scatter: dimension {dimension} of size {} is not divisible by the group size {n}",
                s.dims[d]
            )));
        }
        s.dims[d] /= n;
        let c = self.embed(computation);
        let attrs = Attrs {
            dimensions: Some(vec![dimension]),
            to_apply: Some(c),
            replica_groups: groups(replica_groups),
            ..Default::default()
        };
        self.add_instruction(
            Opcode::ReduceScatter,
            &[operand],
            attrs,
            Some(Shape::Array(s)),
        )
    }

    /// `AllToAll(operand, split_dimension, concat_dimension, split_count, replica_groups)`.
    /// When the dimensions differ, the block index is moved from the split to the concat
    /// dimension around an all-to-all on the split dimension (as XLA's builder does).
    pub fn all_to_all(
        &mut self,
        operand: XlaOp,
        split_dimension: i64,
        concat_dimension: i64,
        split_count: i64,
        replica_groups: &[Vec<i64>],
    ) -> BResult<XlaOp> {
        let s = self.array_shape(operand, "all-to-all")?;
        let rank = s.rank() as i64;
        if !(0..rank).contains(&split_dimension) || !(0..rank).contains(&concat_dimension) {
            return Err(err(format!(
                "all-to-all: split_dimension {split_dimension} and concat_dimension {concat_dimension} must be < rank {rank}"
            )));
        }
        let (sd, cd) = (split_dimension as usize, concat_dimension as usize);
        if split_count <= 0 || s.dims[sd] % split_count != 0 {
            return Err(err(format!(
                "all-to-all: split dimension {sd} of size {} is not divisible by split_count {split_count}",
                s.dims[sd]
            )));
        }
        let attrs = Attrs {
            dimensions: Some(vec![split_dimension]),
            replica_groups: groups(replica_groups),
            ..Default::default()
        };
        let a2a = self.add_instruction(Opcode::AllToAll, &[operand], attrs, None)?;
        if sd == cd {
            return Ok(a2a);
        }
        // [.., n·b (sd), ..] → [.., n, b, ..]; move n in front of the concat dim; merge.
        let mut split: Vec<i64> = s.dims.clone();
        split[sd] /= split_count;
        split.insert(sd, split_count);
        let r1 = self.reshape(a2a, &split)?;
        let cd_in_split = if cd > sd { cd + 1 } else { cd };
        let mut perm: Vec<i64> = (0..split.len() as i64)
            .filter(|&d| d != sd as i64)
            .collect();
        let pos = perm
            .iter()
            .position(|&d| d == cd_in_split as i64)
            .unwrap_or(0);
        perm.insert(pos, sd as i64);
        let t = self.transpose(r1, &perm)?;
        let mut out = s.dims.clone();
        out[sd] /= split_count;
        out[cd] *= split_count;
        self.reshape(t, &out)
    }

    /// `CollectivePermute(operand, source_target_pairs)`.
    pub fn collective_permute(
        &mut self,
        operand: XlaOp,
        source_target_pairs: &[(i64, i64)],
    ) -> BResult<XlaOp> {
        let attrs = Attrs {
            source_target_pairs: Some(source_target_pairs.to_vec()),
            ..Default::default()
        };
        self.add_instruction(Opcode::CollectivePermute, &[operand], attrs, None)
    }

    fn group_size(&self, replica_groups: &[Vec<i64>]) -> i64 {
        match replica_groups.first() {
            Some(g) => g.len() as i64,
            None => self.replica_count.unwrap_or(1),
        }
    }

    /// `Infeed(token, shape)` → `(data, token)`.
    pub fn infeed(&mut self, token: XlaOp, shape: Shape) -> BResult<XlaOp> {
        let out = Shape::Tuple(vec![shape, Shape::Token]);
        self.add_instruction(Opcode::Infeed, &[token], Attrs::default(), Some(out))
    }

    /// `Outfeed(operand, token, shape_with_layout, outfeed_config)` → token.
    pub fn outfeed(&mut self, operand: XlaOp, token: XlaOp) -> BResult<XlaOp> {
        let shape = self.shape(operand).clone();
        let attrs = Attrs {
            outfeed_shape: Some(shape),
            ..Default::default()
        };
        self.add_instruction(
            Opcode::Outfeed,
            &[operand, token],
            attrs,
            Some(Shape::Token),
        )
    }

    /// `Send(operand, token, channel)`: emits `send` + `send-done`; returns the done token.
    pub fn send(
        &mut self,
        operand: XlaOp,
        token: XlaOp,
        channel_id: i64,
        is_host_transfer: bool,
    ) -> BResult<XlaOp> {
        let data = self.shape(operand).clone();
        let attrs = Attrs {
            channel_id: Some(channel_id),
            is_host_transfer: is_host_transfer.then_some(true),
            ..Default::default()
        };
        let ty = Shape::Tuple(vec![data, Shape::scalar(ElementType::U32), Shape::Token]);
        let s = self.add_instruction(Opcode::Send, &[operand, token], attrs.clone(), Some(ty))?;
        self.add_instruction(Opcode::SendDone, &[s], attrs, Some(Shape::Token))
    }

    /// `Recv(token, shape, channel)`: emits `recv` + `recv-done`; returns `(data, token)`.
    pub fn recv(
        &mut self,
        token: XlaOp,
        shape: Shape,
        channel_id: i64,
        is_host_transfer: bool,
    ) -> BResult<XlaOp> {
        let attrs = Attrs {
            channel_id: Some(channel_id),
            is_host_transfer: is_host_transfer.then_some(true),
            ..Default::default()
        };
        let ty = Shape::Tuple(vec![
            shape.clone(),
            Shape::scalar(ElementType::U32),
            Shape::Token,
        ]);
        let r = self.add_instruction(Opcode::Recv, &[token], attrs.clone(), Some(ty))?;
        self.add_instruction(
            Opcode::RecvDone,
            &[r],
            attrs,
            Some(Shape::Tuple(vec![shape, Shape::Token])),
        )
    }

    /// `RngUniform(a, b, shape)`: uniform in `[a, b)`.
    pub fn rng_uniform(&mut self, a: XlaOp, b: XlaOp, shape: ArrayShape) -> BResult<XlaOp> {
        let attrs = Attrs {
            distribution: Some(RngDistribution::Uniform),
            ..Default::default()
        };
        self.add_instruction(Opcode::Rng, &[a, b], attrs, Some(Shape::Array(shape)))
    }

    /// `RngNormal(mu, sigma, shape)`.
    pub fn rng_normal(&mut self, mu: XlaOp, sigma: XlaOp, shape: ArrayShape) -> BResult<XlaOp> {
        let attrs = Attrs {
            distribution: Some(RngDistribution::Normal),
            ..Default::default()
        };
        self.add_instruction(Opcode::Rng, &[mu, sigma], attrs, Some(Shape::Array(shape)))
    }

    /// The older `RngBernoulli(mean, shape)`: u32 values, 1 with probability `mean` (an f32
    /// scalar), else 0; built as `convert(rng_uniform(0, 1) < mean)`.
    pub fn rng_bernoulli(&mut self, mean: XlaOp, dims: &[i64]) -> BResult<XlaOp> {
        let m = self.array_shape(mean, "rng-bernoulli")?;
        if m.ty != ElementType::F32 || !m.is_scalar() {
            return Err(err(format!(
                "rng-bernoulli: mean must be an f32 scalar, got {m}"
            )));
        }
        let zero = self.constant_f32(0.0)?;
        let one = self.constant_f32(1.0)?;
        let u = self.rng_uniform(zero, one, ArrayShape::new(ElementType::F32, dims))?;
        let bits = self.lt(u, mean)?;
        self.convert_element_type(bits, ElementType::U32)
    }

    /// `RngBitGenerator(algorithm, initial_state, shape)` → `(new_state, values)`.
    pub fn rng_bit_generator(
        &mut self,
        algorithm: RngAlgorithm,
        state: XlaOp,
        shape: ArrayShape,
    ) -> BResult<XlaOp> {
        let st = self.shape(state).clone();
        let attrs = Attrs {
            rng_algorithm: Some(algorithm),
            ..Default::default()
        };
        self.add_instruction(
            Opcode::RngBitGenerator,
            &[state],
            attrs,
            Some(Shape::Tuple(vec![st, Shape::Array(shape)])),
        )
    }
}
