//! Development helper: `cosim R C A int8|bf16 TRIALS SEED` (the CLI is `systole rtl sim`).
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
    let m = hw::flow::VerilatorModel::build(&p).unwrap();
    println!("built in {:?} cached {}", m.build_time, m.cached);
    let r = hw::flow::cosim_random(
        &p,
        &m,
        a[5].parse().unwrap(),
        a[6].parse().unwrap(),
        None,
        None,
    )
    .unwrap();
    println!("{r:?}");
}
