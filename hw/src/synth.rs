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
    /// Xilinx only: Yosys's static timing estimate, the latest arrival time in ps of the
    /// flattened netlist with the delays of Yosys's Xilinx cell models (`sta` after reading
    /// `cells_sim.v` with `-specify`). Cell delays only: no routing, no clock-to-out or setup
    /// margins, so `1e6 / sta_ps` MHz is an upper bound on Fmax, not a timing closure.
    pub sta_ps: Option<u64>,
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

/// The latest arrival time (ps) of Yosys's `sta` (`Latest arrival time in 'mxu' is 4607:`).
pub fn parse_sta(log: &str) -> Option<u64> {
    log.lines().rev().find_map(|l| {
        let rest = l.trim().strip_prefix("Latest arrival time in '")?;
        rest.split_once("' is ")?
            .1
            .trim_end_matches(':')
            .parse()
            .ok()
    })
}

/// Synthesizes the MXU for `p` with Yosys for `target` (in a scratch folder kept for the netlist).
pub fn synthesize(p: &MxuParams, target: Target) -> Result<SynthReport, HwError> {
    let dir = crate::flow::scratch_dir(&format!("synth-{}-{}", p.tag(), target.name()))?;
    let v = dir.join("mxu.v");
    tools::write(&v, &emit::verilog(p)?)?;
    let netlist = dir.join("netlist.v");
    let sta = match target {
        Target::Xilinx => "read_verilog -lib -specify +/xilinx/cells_sim.v\nsta\n",
        Target::Ice40 => "",
    };
    let script = format!(
        "read_verilog {v}\n{synth}\nstat\nwrite_verilog -noattr {n}\n{sta}",
        v = v.display(),
        synth = target.script(),
        n = netlist.display()
    );
    let t0 = Instant::now();
    let log = run_yosys(&dir, "synth.ys", &script)?;
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
        sta_ps: parse_sta(&full),
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

/// The iCE40 part place-and-route targets: the largest iCE40 (HX8K: 7 680 logic cells, 32
/// 4-kbit block RAMs), in its largest package.
pub const ICE40_DEVICE: (&str, &str) = ("hx8k", "ct256");

/// Result of placing and routing the MXU on an iCE40 with nextpnr-ice40.
#[derive(Clone, Debug)]
pub struct PnrReport {
    /// `ICESTORM_LC` cells used and available (a logic cell is one LUT4 and one flip-flop).
    pub lc: (u64, u64),
    /// `ICESTORM_RAM` block RAMs used and available.
    pub ram: (u64, u64),
    /// The achieved maximum clock frequency of the MXU's clock after routing (MHz).
    pub fmax_mhz: f64,
    /// Wall time of Yosys and nextpnr.
    pub seconds: f64,
    pub nextpnr: String,
    /// nextpnr's log.
    pub log: PathBuf,
}

/// The place-and-route harness: the MXU between registers, fed by a shift register from one
/// pin and observed through the XOR of its registered outputs on another, so every MXU port is
/// a register-to-register path and the design needs 3 pins (the MXU's own ports are hundreds of
/// bits wide, more than any iCE40 has pins).
pub fn pnr_harness(p: &MxuParams) -> String {
    let (r, c) = (p.rows, p.cols);
    // Inputs: x_valid, x_data, x_rows, x_addr, x_acc, w_valid, w_data.
    let ni = 1 + 16 * r + 32 + 16 + 1 + 1 + 16 * c;
    // Outputs: x_ready, w_ready, r_valid, r_addr, r_data.
    let no = 3 + 16 + 32 * c;
    format!(
        r#"
// Place-and-route harness (docs/rtl.md#fpga-timing): not part of the MXU.
module pnr_top(input wire clk, input wire din, output reg dout);
   localparam NI = {ni}, NO = {no};
   reg [NI-1:0] sin = {{NI{{1'b0}}}};
   always @(posedge clk) sin <= {{sin[NI-2:0], din}};
   wire [NO-1:0] o;
   mxu dut(
      .clock(clk),
      .x_valid(sin[0]),
      .x_data(sin[1 +: {xw}]),
      .x_rows(sin[{xr} +: 32]),
      .x_addr(sin[{xa} +: 16]),
      .x_acc(sin[{xc}]),
      .w_valid(sin[{wv}]),
      .w_data(sin[{wd} +: {ww}]),
      .x_ready(o[0]),
      .w_ready(o[1]),
      .r_valid(o[2]),
      .r_addr(o[3 +: 16]),
      .r_data(o[19 +: {rw}])
   );
   reg [NO-1:0] so = {{NO{{1'b0}}}};
   always @(posedge clk) begin
      so <= o;
      dout <= ^so;
   end
endmodule
"#,
        xw = 16 * r,
        xr = 1 + 16 * r,
        xa = 1 + 16 * r + 32,
        xc = 1 + 16 * r + 48,
        wv = 2 + 16 * r + 48,
        wd = 3 + 16 * r + 48,
        ww = 16 * c,
        rw = 32 * c,
    )
}

/// Synthesizes the MXU in [`pnr_harness`] for iCE40 (the same script as [`synthesize`]) and
/// places and routes it on [`ICE40_DEVICE`] with nextpnr-ice40 (seed 1), reporting the achieved
/// Fmax. A design that does not fit is an error naming the cells it needs.
pub fn place_and_route_ice40(p: &MxuParams) -> Result<PnrReport, HwError> {
    if !tools::available("nextpnr-ice40") {
        return Err(HwError::Tool {
            tool: "nextpnr-ice40".into(),
            msg: "not installed; place-and-route needs it (Debian: apt-get install nextpnr-ice40, \
                  see scripts/setup.sh)"
                .into(),
        });
    }
    let dir = crate::flow::scratch_dir(&format!("pnr-{}-ice40", p.tag()))?;
    let v = dir.join("mxu.v");
    tools::write(&v, &(emit::verilog(p)? + &pnr_harness(p)))?;
    let json = dir.join("pnr.json");
    let script = Target::Ice40.script().replace("-top mxu", "-top pnr_top");
    let script = format!(
        "read_verilog {v}\n{script}\nstat\nwrite_json {j}\n",
        v = v.display(),
        j = json.display()
    );
    let t0 = Instant::now();
    run_yosys(&dir, "pnr.ys", &script)?;
    let log = dir.join("nextpnr.log");
    let (device, package) = ICE40_DEVICE;
    let out = Command::new("nextpnr-ice40")
        .arg(format!("--{device}"))
        .args(["--package", package, "--seed", "1", "--timing-allow-fail"])
        .arg("--json")
        .arg(&json)
        .arg("--log")
        .arg(&log)
        .output()
        .map_err(|e| HwError::Tool {
            tool: "nextpnr-ice40".into(),
            msg: format!("cannot run it ({e})"),
        })?;
    let seconds = t0.elapsed().as_secs_f64();
    let text = std::fs::read_to_string(&log).unwrap_or_else(|_| {
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout)
    });
    let lc = parse_utilisation(&text, "ICESTORM_LC");
    let ram = parse_utilisation(&text, "ICESTORM_RAM");
    if !out.status.success() {
        let need = match lc {
            Some((used, total)) if used > total => {
                format!(" (needs {used} logic cells, the {device} has {total})")
            }
            _ => String::new(),
        };
        let err: Vec<&str> = text.lines().filter(|l| l.contains("ERROR")).collect();
        return Err(HwError::Tool {
            tool: "nextpnr-ice40".into(),
            msg: format!(
                "{} does not place and route on the iCE40 {device}{need}: {}; log {}",
                p.tag(),
                err.join(" / "),
                log.display()
            ),
        });
    }
    let fmax_mhz = parse_fmax(&text).ok_or_else(|| HwError::Tool {
        tool: "nextpnr-ice40".into(),
        msg: format!("no Fmax for the clock in {}", log.display()),
    })?;
    Ok(PnrReport {
        lc: lc.unwrap_or((0, 0)),
        ram: ram.unwrap_or((0, 0)),
        fmax_mhz,
        seconds,
        nextpnr: tools::version("nextpnr-ice40"),
        log,
    })
}

/// `(used, available)` of a cell type from nextpnr's last `Device utilisation` block
/// (`Info:   ICESTORM_LC:  1234/ 7680    16%`).
pub fn parse_utilisation(log: &str, cell: &str) -> Option<(u64, u64)> {
    let key = format!("{cell}:");
    log.lines().rev().find_map(|l| {
        let rest = l.split_once(&key)?.1;
        let (used, rest) = rest.split_once('/')?;
        let total = rest.split_whitespace().next()?;
        Some((used.trim().parse().ok()?, total.parse().ok()?))
    })
}

/// The last `Max frequency for clock '…': F MHz` nextpnr reports (the one after routing).
pub fn parse_fmax(log: &str) -> Option<f64> {
    log.lines().rev().find_map(|l| {
        let rest = l.split_once("Max frequency for clock")?.1;
        let f = rest.split_once("': ")?.1.split_whitespace().next()?;
        f.parse().ok()
    })
}

/// Writes `script` as `dir/name` and runs Yosys on it quietly (log in `dir/yosys.log`);
/// returns Yosys's output.
fn run_yosys(dir: &std::path::Path, name: &str, script: &str) -> Result<String, HwError> {
    let ys = dir.join(name);
    tools::write(&ys, script)?;
    tools::run(
        "yosys",
        Command::new("yosys")
            .arg("-q")
            .arg("-l")
            .arg(dir.join("yosys.log"))
            .arg("-s")
            .arg(&ys),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nextpnr_reports_are_parsed() {
        let log = "Info: Device utilisation:\nInfo: \t         ICESTORM_LC:   120/ 7680     1%\n\
                   Info: \t        ICESTORM_RAM:     2/   32     6%\n\
                   Info: Max frequency for clock 'clk$SB_IO_IN_$glb_clk': 80.00 MHz (PASS at 12.00 MHz)\n\
                   Info: Device utilisation:\nInfo: \t         ICESTORM_LC:   130/ 7680     1%\n\
                   Info: Max frequency for clock 'clk$SB_IO_IN_$glb_clk': 71.25 MHz (PASS at 12.00 MHz)\n";
        assert_eq!(parse_utilisation(log, "ICESTORM_LC"), Some((130, 7680)));
        assert_eq!(parse_utilisation(log, "ICESTORM_RAM"), Some((2, 32)));
        assert_eq!(parse_utilisation(log, "SB_GB"), None);
        assert_eq!(parse_fmax(log), Some(71.25));
        assert_eq!(parse_fmax("Info: nothing"), None);
        let sta = "4. Executing STA pass (static timing analysis).\n\
                   Latest arrival time in 'mxu' is 4607:\n    4607 (<unknown>)\n";
        assert_eq!(parse_sta(sta), Some(4607));
        assert_eq!(parse_sta("Latest arrival time in 'mxu' is soon:"), None);
    }

    #[test]
    fn the_harness_connects_every_port_bit() {
        let p = MxuParams {
            rows: 3,
            cols: 5,
            acc_rows: 16,
            mode: crate::Mode::Int8,
        };
        let h = pnr_harness(&p);
        // Inputs: 1 + 48 + 32 + 16 + 1 + 1 + 80 = 179 bits, the last (w_data) ending at 178.
        assert!(h.contains("localparam NI = 179, NO = 179;"), "{h}");
        assert!(h.contains(".w_data(sin[99 +: 80])"));
        assert!(h.contains(".r_data(o[19 +: 160])"));
    }
}
