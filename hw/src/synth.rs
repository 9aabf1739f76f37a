//! Yosys synthesis for FPGA targets and simulation of the synthesized netlist.
//!
//! * Xilinx: `synth_xilinx -flatten` (DSP48E1 inference on; the accumulator maps to LUT-RAM).
//! * iCE40: `synth_ice40` without `-dsp` (LUT-only multipliers: Yosys 0.23's `-dsp` mapping drops
//!   multipliers of this design).
//!
//! Both run the stock script with its `coarse` step written out minus `share` (see
//! [`Target`]'s script).
//!
//! The netlist is then simulated with Icarus Verilog and Yosys's cell models against the same
//! stimulus and reference as the Verilator co-simulation (see [`NetlistModel`]), so a netlist
//! that passes is synthesizable in fact, not by assumption.

use crate::flow::RtlRunner;
use crate::params::MxuParams;
use crate::{emit, tools, HwError};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// FPGA family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Xilinx,
    Ice40,
}

impl Target {
    pub fn name(self) -> &'static str {
        match self {
            Target::Xilinx => "xilinx",
            Target::Ice40 => "ice40",
        }
    }
    /// The Yosys commands. Both are the stock scripts with their `coarse` step spelled out minus
    /// `share`: resource sharing finds nothing to share here (every operator is busy every
    /// cycle) but its SAT search over the f32 adders' shifters takes tens of minutes.
    fn script(self) -> &'static str {
        match self {
            Target::Xilinx => {
                "synth_xilinx -flatten -top mxu -run :coarse\n\
                 techmap -map +/cmp2lut.v -map +/cmp2lcu.v -D LUT_WIDTH=6\n\
                 alumacc\nopt\nmemory -nomap\nopt_clean\n\
                 synth_xilinx -flatten -top mxu -run map_memory:"
            }
            Target::Ice40 => {
                "synth_ice40 -top mxu -run :coarse\n\
                 opt_expr\nopt_clean\ncheck\nopt -nodffe -nosdff\nfsm\nopt\nwreduce\n\
                 peepopt\nopt_clean\ntechmap -map +/cmp2lut.v -D LUT_WIDTH=4\nopt_expr\n\
                 opt_clean\nmemory_dff\nalumacc\nopt\nmemory -nomap\nopt_clean\n\
                 synth_ice40 -top mxu -run map_ram:"
            }
        }
    }
    fn cells_sim(self) -> PathBuf {
        let share = std::env::var_os("YOSYS_DATDIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/usr/share/yosys"));
        share.join(self.name()).join("cells_sim.v")
    }
}

/// Resource counts of a synthesized design.
#[derive(Clone, Debug, Default)]
pub struct SynthReport {
    pub dsp: u64,
    pub lut: u64,
    pub ff: u64,
    /// Block RAM primitives (RAMB18/RAMB36 or SB_RAM40_4K).
    pub bram: u64,
    /// LUT-RAM primitives (Xilinx distributed RAM).
    pub lutram: u64,
    /// Every cell type with its count, as Yosys's `stat` prints them.
    pub cells: Vec<(String, u64)>,
    pub seconds: f64,
    pub yosys: String,
    /// The synthesized netlist (Verilog).
    pub netlist: PathBuf,
}

/// Classifies Yosys's cell counts into DSP/LUT/FF/BRAM.
pub fn classify(cells: &[(String, u64)]) -> (u64, u64, u64, u64, u64) {
    let (mut dsp, mut lut, mut ff, mut bram, mut lutram) = (0, 0, 0, 0, 0);
    for (name, n) in cells {
        let n = *n;
        if name.starts_with("DSP48") || name == "SB_MAC16" {
            dsp += n;
        } else if name.starts_with("LUT") || name == "SB_LUT4" {
            lut += n;
        } else if name.starts_with("FD") || name.starts_with("SB_DFF") {
            ff += n;
        } else if name.starts_with("RAMB") || name.starts_with("SB_RAM") {
            bram += n;
        } else if name.starts_with("RAM") {
            lutram += n;
        }
    }
    (dsp, lut, ff, bram, lutram)
}

/// Parses the last `Number of cells` block of Yosys's `stat` output.
pub fn parse_stat(log: &str) -> Vec<(String, u64)> {
    let mut cells = Vec::new();
    let mut inside = false;
    for line in log.lines() {
        let t = line.trim();
        if t.starts_with("Number of cells:") {
            inside = true;
            cells.clear();
            continue;
        }
        if inside {
            let f: Vec<&str> = t.split_whitespace().collect();
            match (
                f.len(),
                f.first(),
                f.get(1).and_then(|n| n.parse::<u64>().ok()),
            ) {
                (2, Some(name), Some(n)) => cells.push((name.to_string(), n)),
                _ => inside = false,
            }
        }
    }
    cells
}

/// Synthesizes the MXU for `p` with Yosys for `target` (in a scratch folder kept for the netlist).
pub fn synthesize(p: &MxuParams, target: Target) -> Result<SynthReport, HwError> {
    let dir = crate::flow::scratch_dir(&format!("synth-{}-{}", p.tag(), target.name()))?;
    let v = dir.join("mxu.v");
    tools::write(&v, &emit::verilog(p)?)?;
    let netlist = dir.join("netlist.v");
    let script = format!(
        "read_verilog {v}\n{synth}\nstat\nwrite_verilog -noattr {n}\n",
        v = v.display(),
        synth = target.script(),
        n = netlist.display()
    );
    let ys = dir.join("synth.ys");
    tools::write(&ys, &script)?;
    let t0 = Instant::now();
    let log = tools::run(
        "yosys",
        Command::new("yosys")
            .arg("-q")
            .arg("-l")
            .arg(dir.join("yosys.log"))
            .arg("-s")
            .arg(&ys),
    )?;
    let seconds = t0.elapsed().as_secs_f64();
    let full = std::fs::read_to_string(dir.join("yosys.log")).unwrap_or(log);
    let cells = parse_stat(&full);
    if cells.is_empty() {
        return Err(HwError::Tool {
            tool: "yosys".into(),
            msg: format!("no cell statistics in {}", dir.join("yosys.log").display()),
        });
    }
    let (dsp, lut, ff, bram, lutram) = classify(&cells);
    Ok(SynthReport {
        dsp,
        lut,
        ff,
        bram,
        lutram,
        cells,
        seconds,
        yosys: tools::version("yosys"),
        netlist,
    })
}

/// A synthesized netlist compiled with Icarus Verilog and the target's cell models, driven by a
/// Verilog testbench that follows the same protocol and transcript format as the C++ harness.
pub struct NetlistModel {
    vvp: PathBuf,
}

impl NetlistModel {
    pub fn new(p: &MxuParams, target: Target, netlist: &Path) -> Result<Self, HwError> {
        let dir = netlist.parent().unwrap_or(Path::new(".")).to_path_buf();
        let tb = dir.join("tb.v");
        tools::write(&tb, &crate::tb::testbench(p))?;
        let vvp = dir.join("tb.vvp");
        let mut cmd = Command::new("iverilog");
        cmd.args(["-g2012", "-o"])
            .arg(&vvp)
            .args(["-s", "tb", "-DNO_ICE40_DEFAULT_ASSIGNMENTS"])
            .arg(&tb)
            .arg(netlist)
            .arg(target.cells_sim());
        tools::run("iverilog", &mut cmd)?;
        Ok(NetlistModel { vvp })
    }
}

impl RtlRunner for NetlistModel {
    fn run(&self, stimulus: &Path, _vcd: Option<&Path>) -> Result<String, HwError> {
        let mut cmd = Command::new("vvp");
        cmd.arg("-n")
            .arg(&self.vvp)
            .arg(format!("+stim={}", stimulus.display()));
        tools::run("vvp", &mut cmd)
    }
}
