//! Assembler directives: `.region`, `.dma`, `.pat`, `.sem`, `.data`, `.hlo`.

/// The `.sem` directive text of a declaration (what the disassembler prints).
pub fn sem_directive(d: &SemDecl) -> String {
    let mut s = format!(".sem sem{}", d.sem);
    if d.wait != 1 {
        s += &format!(" wait={}", d.wait);
    }
    if d.signal != 1 {
        s += &format!(" signal={}", d.signal);
    }
    if d.shared {
        s += " shared";
    }
    s
}

use super::lex::{col_of, quote, unquote, Line};
use super::AsmError;
use crate::operand::Operand;
use crate::operand::{parse_int, Space};
use crate::program::{
    DataSegment, DmaDesc, DmaDim, Program, Region, RegionArray, RegionIo, SemDecl, SymbolRange,
};

/// An open `.hlo` range: where it started and the directive's position for errors.
pub(super) struct OpenSym {
    start: u32,
    name: String,
    err: AsmError,
}

impl OpenSym {
    pub(super) fn close(self, p: &mut Program) -> Result<(), AsmError> {
        let end = p.code.len() as u32;
        if self.start == end {
            return Err(AsmError {
                msg: format!(".hlo {} covers no instruction", quote(&self.name)),
                ..self.err
            });
        }
        p.symbols.push(SymbolRange {
            start: self.start,
            end,
            hlo: self.name,
        });
        Ok(())
    }
}

pub(super) fn directive(
    p: &mut Program,
    l: &Line,
    rest: &str,
    open_sym: &mut Option<OpenSym>,
) -> Result<(), AsmError> {
    let name_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let name = &rest[..name_end];
    let args = rest[name_end..].trim_start();
    let acol = col_of(l.raw, args);
    match name {
        ".hlo" => {
            let pc = p.code.len() as u32;
            if let Some(o) = open_sym.take() {
                o.close(p)?;
            }
            if args == "-" {
                return Ok(());
            }
            let (s, tail) = unquote(args).map_err(|m| l.err(acol, m))?;
            if !tail.trim().is_empty() {
                return Err(l.err(col_of(l.raw, tail.trim()), "unexpected text after the name"));
            }
            if s.is_empty() {
                return Err(l.err(acol, "empty HLO name"));
            }
            *open_sym = Some(OpenSym {
                start: pc,
                name: s,
                err: l.err(col_of(l.raw, rest), ""),
            });
        }
        ".region" => {
            let (rname, tail) = unquote(args).map_err(|m| l.err(acol, m))?;
            let f: Vec<&str> = tail.split_whitespace().collect();
            if f.len() < 3 {
                return Err(l.err(
                    acol,
                    ".region expects \"NAME\" SPACE ADDR SIZE [TYPE[DIMS]{LAYOUT}] [io=PLACE] \
                     [live=FROM..TO]",
                ));
            }
            let space = parse_space(l, f[0])?;
            let addr = parse_u64(l, f[1])?;
            let size = parse_u64(l, f[2])?;
            if rname.is_empty() {
                return Err(l.err(acol, "empty region name"));
            }
            if p.region(&rname).is_some() {
                return Err(l.err(acol, format!("region {} is defined twice", quote(&rname))));
            }
            let mut r = Region::plain(rname, space, addr, size);
            for extra in &f[3..] {
                let col = col_of(l.raw, extra);
                if let Some(v) = extra.strip_prefix("io=") {
                    if p.regions
                        .iter()
                        .any(|q| q.io.as_ref().map(|x| x.text()) == Some(v.into()))
                    {
                        return Err(l.err(col, format!("{v} is held by two regions")));
                    }
                    r.io = Some(RegionIo::parse(v).map_err(|m| l.err(col, m))?);
                } else if let Some(v) = extra.strip_prefix("live=") {
                    let (a, b) = v
                        .split_once("..")
                        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
                        .filter(|(a, b)| a <= b)
                        .ok_or_else(|| {
                            l.err(
                                col,
                                format!("expected live=FROM..TO with FROM <= TO, got `{v}`"),
                            )
                        })?;
                    r.live = Some((a, b));
                } else {
                    let a = RegionArray::parse(extra).map_err(|m| l.err(col, m))?;
                    if let Some(why) = a.check(size) {
                        return Err(l.err(col, why));
                    }
                    r.array = Some(a);
                }
            }
            p.regions.push(r);
        }
        ".data" => {
            let f: Vec<&str> = args.split_whitespace().collect();
            if f.len() != 3 {
                return Err(l.err(acol, ".data expects SPACE ADDR HEXBYTES (or - for none)"));
            }
            let space = parse_space(l, f[0])?;
            let addr = parse_u64(l, f[1])?;
            let bytes = if f[2] == "-" {
                Vec::new()
            } else {
                parse_hex(f[2]).map_err(|m| l.err(col_of(l.raw, f[2]), m))?
            };
            p.data.push(DataSegment { space, addr, bytes });
        }
        ".dma" => {
            let f: Vec<&str> = args.splitn(2, char::is_whitespace).collect();
            let idx = parse_u64(l, f[0])?;
            if idx != p.dma.len() as u64 {
                return Err(l.err(
                    acol,
                    format!(
                        ".dma {idx}: descriptors must be numbered in order, expected {}",
                        p.dma.len()
                    ),
                ));
            }
            let spec: String = f.get(1).copied().unwrap_or("").split_whitespace().collect();
            let desc = parse_dma(&spec).map_err(|m| l.err(acol, format!(".dma: {m}")))?;
            p.dma.push(desc);
        }
        ".pat" => {
            let f: Vec<&str> = args.splitn(2, char::is_whitespace).collect();
            let idx = parse_u64(l, f[0])?;
            if idx != p.pats.len() as u64 {
                return Err(l.err(
                    acol,
                    format!(
                        ".pat {idx}: patterns must be numbered in order, expected {}",
                        p.pats.len()
                    ),
                ));
            }
            let spec = f.get(1).copied().unwrap_or("");
            let col = if spec.is_empty() {
                acol
            } else {
                col_of(l.raw, spec)
            };
            let pat = crate::program::Pattern::parse(spec)
                .map_err(|m| l.err(col, format!(".pat: {m}")))?;
            p.pats.push(pat);
        }
        ".sem" => {
            let mut f = args.split_whitespace();
            let first = f.next().unwrap_or("");
            let sem = crate::operand::Sem::parse_asm(first, &Default::default())
                .map_err(|m| l.err(col_of(l.raw, first).max(acol), format!(".sem: {m}")))?
                .0;
            let mut d = SemDecl::plain(sem);
            for w in f {
                let col = col_of(l.raw, w);
                let count = |v: &str| -> Result<u32, AsmError> {
                    match v.parse::<u32>() {
                        Ok(n) if n >= 1 => Ok(n),
                        _ => Err(l.err(col, format!(".sem: `{w}`: the count must be 1..2^32-1"))),
                    }
                };
                match w.split_once('=') {
                    Some(("wait", v)) => d.wait = count(v)?,
                    Some(("signal", v)) => d.signal = count(v)?,
                    None if w == "shared" => d.shared = true,
                    _ => {
                        return Err(l.err(
                            col,
                            format!(".sem: unknown `{w}` (expected wait=K, signal=K or shared)"),
                        ))
                    }
                }
            }
            if p.sems.iter().any(|x| x.sem == sem) {
                return Err(l.err(acol, format!(".sem: sem{sem} is declared twice")));
            }
            let at = p.sems.partition_point(|x| x.sem < sem);
            p.sems.insert(at, d);
        }
        _ => {
            return Err(l.err(
                col_of(l.raw, name),
                format!(
                "unknown directive `{name}` (expected .region, .dma, .pat, .sem, .data or .hlo)"
            ),
            ))
        }
    }
    Ok(())
}

fn parse_space(l: &Line, s: &str) -> Result<Space, AsmError> {
    Space::from_name(s).ok_or_else(|| {
        l.err(
            col_of(l.raw, s),
            format!("unknown memory space `{s}` (expected hbm or vmem)"),
        )
    })
}

fn parse_u64(l: &Line, s: &str) -> Result<u64, AsmError> {
    parse_int(s)
        .and_then(|v| u64::try_from(v).map_err(|_| format!("`{s}` is out of range")))
        .map_err(|m| l.err(col_of(l.raw, s), m))
}

fn parse_hex(s: &str) -> Result<Vec<u8>, String> {
    if let Some(c) = s.chars().find(|c| !c.is_ascii_hexdigit()) {
        return Err(format!("bad hex digit `{c}` in data"));
    }
    if s.len() % 2 == 1 {
        return Err("hex data needs an even number of digits".into());
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&s[i..i + 2], 16)
                .map_err(|_| format!("bad hex byte `{}`", &s[i..i + 2]))
        })
        .collect()
}

/// Parses `len=N` or `len=N,dims=[(c,s,d),...]` / `len=Ndims=[...]` (whitespace removed).
fn parse_dma(spec: &str) -> Result<DmaDesc, String> {
    let rest = spec.strip_prefix("len=").ok_or("expected len=BYTES")?;
    let (len_s, dims_s) = match rest.find("dims=") {
        Some(i) => (rest[..i].trim_end_matches(','), Some(&rest[i + 5..])),
        None => (rest, None),
    };
    let len =
        u32::try_from(parse_int(len_s)?).map_err(|_| format!("len `{len_s}` is out of range"))?;
    let mut dims = Vec::new();
    if let Some(d) = dims_s {
        let inner = d
            .strip_prefix('[')
            .and_then(|x| x.strip_suffix(']'))
            .ok_or("expected dims=[(COUNT,SRC_STRIDE,DST_STRIDE),...]")?;
        if !inner.is_empty() {
            for t in inner.split("),") {
                let t = t.trim_start_matches('(').trim_end_matches(')');
                let v: Vec<&str> = t.split(',').collect();
                if v.len() != 3 {
                    return Err(format!(
                        "dimension `({t})` needs 3 numbers: count, src_stride, dst_stride"
                    ));
                }
                let count = u32::try_from(parse_int(v[0])?)
                    .map_err(|_| "count out of range".to_string())?;
                let src_stride = i64::try_from(parse_int(v[1])?)
                    .map_err(|_| "stride out of range".to_string())?;
                let dst_stride = i64::try_from(parse_int(v[2])?)
                    .map_err(|_| "stride out of range".to_string())?;
                dims.push(DmaDim {
                    count,
                    src_stride,
                    dst_stride,
                });
            }
        }
    }
    let d = DmaDesc { len, dims };
    if d.len == 0 {
        return Err("len must be >= 1".into());
    }
    if d.dims.len() > crate::program::MAX_DMA_DIMS {
        return Err(format!(
            "{} dimensions, at most {}",
            d.dims.len(),
            crate::program::MAX_DMA_DIMS
        ));
    }
    if d.dims.iter().any(|x| x.count == 0) {
        return Err("every count must be >= 1".into());
    }
    Ok(d)
}
