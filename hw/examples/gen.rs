//! Emits the MXU Verilog for `R C A int8|bf16` to stdout (development helper).
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let p = hw::MxuParams {
        rows: a[1].parse().unwrap(),
        cols: a[2].parse().unwrap(),
        acc_rows: a[3].parse().unwrap(),
        mode: if a[4] == "bf16" {
            hw::Mode::Bf16
        } else {
            hw::Mode::Int8
        },
    };
    print!("{}", hw::emit::verilog(&p).unwrap());
}
