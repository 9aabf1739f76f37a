//! The Verilog testbench for netlist simulation (Icarus): the same in-order release rule,
//! ready/valid streaming and transcript (`A`, `R`, `D` lines) as the C++ Verilator harness in
//! [`crate::harness`]; the stimulus file name comes from `+stim=FILE`.

use crate::params::MxuParams;

/// Testbench source for `p` (capacity: 256 ops and their data).
pub fn testbench(p: &MxuParams) -> String {
    let (r, c) = (p.rows, p.cols);
    let max_data = 256 * (r * c).max(p.acc_rows.max(3 * r + 2) * r);
    format!(
        r#"`timescale 1ns/1ps
module tb;
   localparam R = {r}, C = {c}, MAXOPS = 256, MAXDATA = {max_data};
   reg clock = 1'b0;
   reg x_valid = 1'b0;
   wire x_ready;
   reg [16*R-1:0] x_data = 0;
   reg [31:0] x_rows = 0;
   reg [15:0] x_addr = 0;
   reg x_acc = 1'b0;
   reg w_valid = 1'b0;
   wire w_ready;
   reg [16*C-1:0] w_data = 0;
   wire r_valid;
   wire [15:0] r_addr;
   wire [32*C-1:0] r_data;
   mxu dut(.clock(clock), .x_valid(x_valid), .x_ready(x_ready), .x_data(x_data), .x_rows(x_rows),
           .x_addr(x_addr), .x_acc(x_acc), .w_valid(w_valid), .w_ready(w_ready), .w_data(w_data),
           .r_valid(r_valid), .r_addr(r_addr), .r_data(r_data));

   reg [7:0] kind [0:MAXOPS-1];
   reg [63:0] offer [0:MAXOPS-1];
   integer mrows [0:MAXOPS-1];
   integer maddr [0:MAXOPS-1];
   integer macc [0:MAXOPS-1];
   integer base [0:MAXOPS-1];
   reg [15:0] data [0:MAXDATA-1];
   integer xq [0:MAXOPS-1];
   integer wq [0:MAXOPS-1];
   integer fd, code, nops, i, j, n, len, total_rows, rows_seen, xh, xt, wh, wt, xbeat, wbeat, next;
   integer op;
   reg prev_acc, xf, wf;
   reg [63:0] cycle, last_accept, limit, off;
   reg [7:0] ks;
   reg [15:0] v;
   reg [1023:0] fname;
   initial begin
      if (!$value$plusargs("stim=%s", fname)) begin $display("no +stim"); $finish; end
      fd = $fopen(fname, "r");
      code = $fscanf(fd, "%d", nops);
      len = 0; total_rows = 0; limit = 1000;
      for (i = 0; i < nops; i = i + 1) begin
         code = $fscanf(fd, "%s %d", ks, off);
         kind[i] = ks; offer[i] = off; base[i] = len; mrows[i] = R; maddr[i] = 0; macc[i] = 0;
         if (ks == "M") begin
            code = $fscanf(fd, "%d %d %d", mrows[i], maddr[i], macc[i]);
            n = mrows[i] * R; total_rows = total_rows + mrows[i];
         end else n = R * C;
         for (j = 0; j < n; j = j + 1) begin code = $fscanf(fd, "%h", v); data[len + j] = v; end
         len = len + n;
         limit = limit + off + mrows[i] + 4 * (R + C);
      end
      $fclose(fd);
      cycle = 0; last_accept = 0; next = 0; prev_acc = 1'b1; rows_seen = 0;
      xh = 0; xt = 0; wh = 0; wt = 0; xbeat = 0; wbeat = 0;
      #5;
      while (cycle < limit && !(next == nops && xh == xt && wh == wt && rows_seen >= total_rows)) begin
         if (next < nops && prev_acc && cycle >= offer[next] && (next == 0 || cycle > last_accept)) begin
            if (kind[next] == "M") begin xq[xt] = next; xt = xt + 1; end
            else begin wq[wt] = next; wt = wt + 1; end
            prev_acc = 1'b0;
            next = next + 1;
         end
         x_valid = (xh != xt);
         if (xh != xt) begin
            op = xq[xh];
            for (j = 0; j < R; j = j + 1) x_data[16*j +: 16] = data[base[op] + xbeat * R + j];
            x_rows = mrows[op]; x_addr = maddr[op]; x_acc = macc[op];
         end
         w_valid = (wh != wt);
         if (wh != wt) begin
            op = wq[wh];
            for (j = 0; j < C; j = j + 1) w_data[16*j +: 16] = data[base[op] + wbeat * C + j];
         end
         #1;
         if (r_valid) begin
            $write("R %0d %0d", cycle, r_addr);
            for (j = 0; j < C; j = j + 1) $write(" %08x", r_data[32*j +: 32]);
            $write("\n");
            rows_seen = rows_seen + 1;
         end
         xf = x_valid && x_ready;
         wf = w_valid && w_ready;
         if (xf) begin
            op = xq[xh];
            if (xbeat == 0) begin $display("A %0d %0d", op, cycle); last_accept = cycle; prev_acc = 1'b1; end
            xbeat = xbeat + 1;
            if (xbeat == mrows[op]) begin xbeat = 0; xh = xh + 1; end
         end
         if (wf) begin
            op = wq[wh];
            if (wbeat == 0) begin $display("A %0d %0d", op, cycle); last_accept = cycle; prev_acc = 1'b1; end
            wbeat = wbeat + 1;
            if (wbeat == R) begin wbeat = 0; wh = wh + 1; end
         end
         #4 clock = 1'b1;
         #5 clock = 1'b0;
         cycle = cycle + 1;
      end
      $display("D %0d", cycle);
      $finish;
   end
endmodule
"#
    )
}
