//! The binary program file format (little-endian throughout):
//!
//! ```text
//! magic    8 bytes  "SYSTPRG\0"
//! version  u32      1
//! count    u32      number of sections
//! section  tag [u8; 4], length u64, payload (length bytes)     × count
//! ```
//! Sections (each at most once; the writer emits all of them in this order):
//! * `CODE`: u32 n, then n instruction words of 16 bytes.
//! * `DATA`: u32 n, then n × (space u8, addr u64, len u64, bytes).
//! * `DMAD`: u32 n, then n × (len u32, ndims u8, ndims × (count u32, src_stride i64, dst_stride i64)).
//! * `REGN`: u32 n, then n × (name, space u8, addr u64, size u64).
//! * `SYMS`: u32 n, then n × (start u32, end u32, name).
//! * `PATS`: u32 n, then n × (u8 operands, operands × (name, u8 ndims, ndims × (count u32,
//!   stride u64))). Older files without it read as programs without patterns.
//! * `SEMS`: u32 n, then n × (sem u8, wait u32, signal u32, shared u8).
//! * `REGX`: what is known about regions beyond their place (after `REGN`): u32 n, then
//!   n × (region index u32, flags u8; if flags & 1: dtype u8 (+0x80: complex pairs), rank u8, rank × dim u64,
//!   rank × minor-to-major u8; if flags & 2: kind u8 (0 param, 1 result), number u32, depth u8,
//!   depth × tuple index u32; if flags & 4: live from u32, to u32). Older files without it read
//!   as regions with nothing known.
//!
//! Strings are u32 byte length + UTF-8. Spaces: 0 = hbm, 1 = vmem. The reader rejects unknown
//! or repeated sections, trailing bytes, and programs that fail [`Program::validate`].

use crate::operand::DType;
use crate::operand::{Operand, Space};
use crate::program::{
    DataSegment, DmaDesc, DmaDim, Program, ProgramError, Region, RegionArray, RegionIo, SymbolRange,
};
use crate::table::Inst;
use crate::word::Word;

/// File magic.
pub const MAGIC: &[u8; 8] = b"SYSTPRG\0";
/// Format version this crate writes and reads.
pub const VERSION: u32 = 1;

const TAGS: [&[u8; 4]; 8] = [
    b"CODE", b"DATA", b"DMAD", b"REGN", b"SYMS", b"SEMS", b"REGX", b"PATS",
];

impl Program {
    /// Serializes to the binary format; fails if an instruction cannot be encoded.
    pub fn to_bytes(&self) -> Result<Vec<u8>, ProgramError> {
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(TAGS.len() as u32).to_le_bytes());
        for tag in TAGS {
            let mut b = Vec::new();
            match tag {
                b"CODE" => {
                    put_u32(&mut b, self.code.len() as u32);
                    for (pc, i) in self.code.iter().enumerate() {
                        let w = i.encode().map_err(|e| {
                            ProgramError::Invalid(vec![format!("instruction {pc}: {e}")])
                        })?;
                        b.extend_from_slice(&w.to_bytes());
                    }
                }
                b"DATA" => {
                    put_u32(&mut b, self.data.len() as u32);
                    for s in &self.data {
                        b.push(s.space as u8);
                        put_u64(&mut b, s.addr);
                        put_u64(&mut b, s.bytes.len() as u64);
                        b.extend_from_slice(&s.bytes);
                    }
                }
                b"DMAD" => {
                    put_u32(&mut b, self.dma.len() as u32);
                    for d in &self.dma {
                        put_u32(&mut b, d.len);
                        b.push(d.dims.len() as u8);
                        for x in &d.dims {
                            put_u32(&mut b, x.count);
                            put_u64(&mut b, x.src_stride as u64);
                            put_u64(&mut b, x.dst_stride as u64);
                        }
                    }
                }
                b"REGN" => {
                    put_u32(&mut b, self.regions.len() as u32);
                    for r in &self.regions {
                        put_str(&mut b, &r.name);
                        b.push(r.space as u8);
                        put_u64(&mut b, r.addr);
                        put_u64(&mut b, r.size);
                    }
                }
                b"REGX" => {
                    let known: Vec<(usize, &Region)> = self
                        .regions
                        .iter()
                        .enumerate()
                        .filter(|(_, r)| r.array.is_some() || r.io.is_some() || r.live.is_some())
                        .collect();
                    put_u32(&mut b, known.len() as u32);
                    for (i, r) in known {
                        put_u32(&mut b, i as u32);
                        let flags = r.array.is_some() as u8
                            | (r.io.is_some() as u8) << 1
                            | (r.live.is_some() as u8) << 2;
                        b.push(flags);
                        if let Some(a) = &r.array {
                            b.push(a.dtype as u8 | if a.complex { 0x80 } else { 0 });
                            b.push(a.dims.len() as u8);
                            for &d in &a.dims {
                                put_u64(&mut b, d);
                            }
                            b.extend_from_slice(&a.minor_to_major);
                        }
                        if let Some(io) = &r.io {
                            let (kind, number, index) = match io {
                                RegionIo::Param { number, index } => (0u8, *number, index),
                                RegionIo::Result { index } => (1u8, 0, index),
                            };
                            b.push(kind);
                            put_u32(&mut b, number);
                            b.push(index.len() as u8);
                            for &k in index {
                                put_u32(&mut b, k);
                            }
                        }
                        if let Some((from, to)) = r.live {
                            put_u32(&mut b, from);
                            put_u32(&mut b, to);
                        }
                    }
                }
                b"PATS" => {
                    put_u32(&mut b, self.pats.len() as u32);
                    for x in &self.pats {
                        b.push(x.operands.len() as u8);
                        for (f, l) in &x.operands {
                            put_str(&mut b, f);
                            b.push(l.dims.len() as u8);
                            for d in &l.dims {
                                put_u32(&mut b, d.count);
                                put_u64(&mut b, d.stride);
                            }
                        }
                    }
                }
                b"SEMS" => {
                    put_u32(&mut b, self.sems.len() as u32);
                    for d in &self.sems {
                        b.push(d.sem);
                        put_u32(&mut b, d.wait);
                        put_u32(&mut b, d.signal);
                        b.push(d.shared as u8);
                    }
                }
                _ => {
                    put_u32(&mut b, self.symbols.len() as u32);
                    for s in &self.symbols {
                        put_u32(&mut b, s.start);
                        put_u32(&mut b, s.end);
                        put_str(&mut b, &s.hlo);
                    }
                }
            }
            out.extend_from_slice(tag);
            put_u64(&mut out, b.len() as u64);
            out.extend_from_slice(&b);
        }
        Ok(out)
    }

    /// Reads the binary format and validates the program.
    pub fn from_bytes(bytes: &[u8]) -> Result<Program, ProgramError> {
        let mut r = Cursor { b: bytes, pos: 0 };
        let magic = r.take(8)?;
        if magic != MAGIC {
            return Err(r.err_at(0, "not a systole program file (bad magic)"));
        }
        let version = r.u32()?;
        if version != VERSION {
            return Err(r.err_at(
                8,
                format!("unsupported format version {version} (this build reads {VERSION})"),
            ));
        }
        let count = r.u32()?;
        let mut p = Program::default();
        let mut seen = [false; TAGS.len()];
        for _ in 0..count {
            let at = r.pos;
            let tag: [u8; 4] = r.take(4)?.try_into().expect("4 bytes");
            let len = r.u64()?;
            let len = usize::try_from(len).map_err(|_| r.err_at(at, "section too large"))?;
            r.take(len)?;
            let which = TAGS.iter().position(|t| **t == tag).ok_or_else(|| {
                r.err_at(
                    at,
                    format!("unknown section {:?}", String::from_utf8_lossy(&tag)),
                )
            })?;
            if seen[which] {
                return Err(r.err_at(
                    at,
                    format!("section {} appears twice", String::from_utf8_lossy(&tag)),
                ));
            }
            seen[which] = true;
            let base = r.pos - len;
            let mut s = Cursor {
                b: &bytes[..r.pos],
                pos: base,
            };
            read_section(&mut s, which, &mut p)?;
            if s.pos != r.pos {
                return Err(s.err_at(s.pos, "trailing bytes in section"));
            }
        }
        if r.pos != bytes.len() {
            return Err(r.err_at(r.pos, "trailing bytes after the last section"));
        }
        p.validate()?;
        Ok(p)
    }
}

fn read_section(s: &mut Cursor, which: usize, p: &mut Program) -> Result<(), ProgramError> {
    let n = s.u32()?;
    for _ in 0..n {
        let at = s.pos;
        match which {
            0 => {
                let w: [u8; 16] = s.take(16)?.try_into().expect("16 bytes");
                let inst = Inst::decode(Word::from_bytes(w))
                    .map_err(|e| s.err_at(at, format!("instruction {}: {e}", p.code.len())))?;
                p.code.push(inst);
            }
            1 => {
                let space = s.space()?;
                let addr = s.u64()?;
                let len = s.u64()?;
                let len =
                    usize::try_from(len).map_err(|_| s.err_at(at, "data segment too large"))?;
                let bytes = s.take(len)?.to_vec();
                p.data.push(DataSegment { space, addr, bytes });
            }
            2 => {
                let len = s.u32()?;
                let nd = s.take(1)?[0];
                if nd as usize > crate::program::MAX_DMA_DIMS {
                    return Err(s.err_at(at, format!("DMA descriptor with {nd} dimensions")));
                }
                let mut dims = Vec::new();
                for _ in 0..nd {
                    dims.push(DmaDim {
                        count: s.u32()?,
                        src_stride: s.u64()? as i64,
                        dst_stride: s.u64()? as i64,
                    });
                }
                p.dma.push(DmaDesc { len, dims });
            }
            7 => {
                let nops = s.take(1)?[0];
                let mut x = crate::program::Pattern::default();
                for _ in 0..nops {
                    let f = s.string()?;
                    let nd = s.take(1)?[0];
                    if nd as usize > crate::program::MAX_PAT_DIMS {
                        return Err(s.err_at(at, format!("pattern with {nd} dimensions")));
                    }
                    let mut dims = Vec::new();
                    for _ in 0..nd {
                        dims.push(crate::program::PatDim {
                            count: s.u32()?,
                            stride: s.u64()?,
                        });
                    }
                    x.operands.push((f, crate::program::Layout { dims }));
                }
                p.pats.push(x);
            }
            3 => {
                let name = s.string()?;
                let space = s.space()?;
                let addr = s.u64()?;
                let size = s.u64()?;
                p.regions.push(Region::plain(name, space, addr, size));
            }
            6 => {
                let i = s.u32()? as usize;
                let flags = s.take(1)?[0];
                if flags > 7 {
                    return Err(s.err_at(at, format!("region flags {flags:#x}")));
                }
                if i >= p.regions.len() {
                    return Err(s.err_at(
                        at,
                        format!("region {i} does not exist ({} regions)", p.regions.len()),
                    ));
                }
                if flags & 1 != 0 {
                    let byte = s.take(1)?[0];
                    let (code, complex) = (byte & 0x7f, byte & 0x80 != 0);
                    let dtype = DType::ALL
                        .iter()
                        .copied()
                        .find(|d| *d as u8 == code)
                        .ok_or_else(|| s.err_at(at, format!("element type code {code}")))?;
                    let rank = s.take(1)?[0] as usize;
                    let mut dims = Vec::with_capacity(rank);
                    for _ in 0..rank {
                        dims.push(s.u64()?);
                    }
                    let minor_to_major = s.take(rank)?.to_vec();
                    p.regions[i].array = Some(RegionArray {
                        dtype,
                        complex,
                        dims,
                        minor_to_major,
                    });
                }
                if flags & 2 != 0 {
                    let kind = s.take(1)?[0];
                    let number = s.u32()?;
                    let depth = s.take(1)?[0] as usize;
                    let mut index = Vec::with_capacity(depth);
                    for _ in 0..depth {
                        index.push(s.u32()?);
                    }
                    p.regions[i].io = Some(match kind {
                        0 => RegionIo::Param { number, index },
                        1 => RegionIo::Result { index },
                        k => return Err(s.err_at(at, format!("region interface kind {k}"))),
                    });
                }
                if flags & 4 != 0 {
                    p.regions[i].live = Some((s.u32()?, s.u32()?));
                }
            }
            5 => {
                let sem = s.take(1)?[0];
                let wait = s.u32()?;
                let signal = s.u32()?;
                let shared = match s.take(1)?[0] {
                    0 => false,
                    1 => true,
                    x => return Err(s.err_at(at, format!("semaphore flag {x} is not 0 or 1"))),
                };
                p.sems.push(crate::program::SemDecl {
                    sem,
                    wait,
                    signal,
                    shared,
                });
            }
            _ => {
                let start = s.u32()?;
                let end = s.u32()?;
                let hlo = s.string()?;
                p.symbols.push(SymbolRange { start, end, hlo });
            }
        }
    }
    Ok(())
}

fn put_u32(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_le_bytes());
}
fn put_u64(b: &mut Vec<u8>, v: u64) {
    b.extend_from_slice(&v.to_le_bytes());
}
fn put_str(b: &mut Vec<u8>, s: &str) {
    put_u32(b, s.len() as u32);
    b.extend_from_slice(s.as_bytes());
}

struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn err_at(&self, offset: usize, msg: impl Into<String>) -> ProgramError {
        ProgramError::Format {
            offset,
            msg: msg.into(),
        }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], ProgramError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| {
                self.err_at(
                    self.pos,
                    format!("unexpected end of file (needed {n} more bytes)"),
                )
            })?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u32(&mut self) -> Result<u32, ProgramError> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn u64(&mut self) -> Result<u64, ProgramError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn space(&mut self) -> Result<Space, ProgramError> {
        let at = self.pos;
        let v = self.take(1)?[0];
        Space::from_raw(v as u64, 2).ok_or_else(|| self.err_at(at, format!("bad memory space {v}")))
    }
    fn string(&mut self) -> Result<String, ProgramError> {
        let at = self.pos;
        let n = self.u32()? as usize;
        let bytes = self.take(n)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| self.err_at(at, "string is not UTF-8"))
    }
}
