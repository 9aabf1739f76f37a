//! Verilog text of the numeric primitives of the MXU contract (`docs/mxu-contract.md`), emitted
//! into the leaf modules that need them (the PE module, and for bf16 the accumulator column's
//! module; each is written once per design, and Yosys and Verilator inline the functions).
//!
//! * `mul_i8(a, w)`: i8 × i8 → i32 (sign-extended exact product).
//! * `mul_bf16(a, w)`: bf16 × bf16 → f32, exact; DAZ inputs; tiny products flush to ±0
//!   (sign `sa ^ sw`), huge ones become ±inf, `inf·0` and NaN inputs give `0x7FC00000`.
//! * `add_f32(a, b)`: f32 + f32 rounded to nearest even; inputs with a zero exponent are read as
//!   zero; a result below the smallest normal is flushed to zero keeping its sign; exact
//!   cancellation gives +0; any NaN result is `0x7FC00000`.
//!
//! The Rust side of the same arithmetic (rust-hdl `update`) is `sim::numerics`; co-simulation
//! checks that both agree bit for bit.

/// Verilog function `mul_i8`.
pub const MUL_I8: &str = r#"
function [31:0] mul_i8;
   input [7:0] a;
   input [7:0] w;
   reg signed [15:0] p;
   begin
      p = $signed(a) * $signed(w);
      mul_i8 = {{16{p[15]}}, p};
   end
endfunction
"#;

/// Verilog function `mul_bf16`.
pub const MUL_BF16: &str = r#"
function [31:0] mul_bf16;
   input [15:0] a;
   input [15:0] w;
   reg s;
   reg [7:0] ea;
   reg [7:0] ew;
   reg a_nan;
   reg w_nan;
   reg a_inf;
   reg w_inf;
   reg a_zero;
   reg w_zero;
   reg [15:0] sig;
   reg signed [10:0] e;
   reg [22:0] frac;
   begin
      s = a[15] ^ w[15];
      ea = a[14:7];
      ew = w[14:7];
      a_nan = (ea == 8'hFF) && (a[6:0] != 7'd0);
      w_nan = (ew == 8'hFF) && (w[6:0] != 7'd0);
      a_inf = (ea == 8'hFF) && (a[6:0] == 7'd0);
      w_inf = (ew == 8'hFF) && (w[6:0] == 7'd0);
      a_zero = (ea == 8'd0);
      w_zero = (ew == 8'd0);
      sig = {8'd1, a[6:0]} * {8'd1, w[6:0]};
      e = $signed({3'b000, ea}) + $signed({3'b000, ew}) - 11'sd127;
      if (sig[15]) begin
         frac = {sig[14:0], 8'd0};
         e = e + 11'sd1;
      end else begin
         frac = {sig[13:0], 9'd0};
      end
      if (a_nan || w_nan || (a_inf && w_zero) || (a_zero && w_inf))
         mul_bf16 = 32'h7FC00000;
      else if (a_inf || w_inf)
         mul_bf16 = {s, 8'hFF, 23'd0};
      else if (a_zero || w_zero)
         mul_bf16 = {s, 31'd0};
      else if (e >= 11'sd255)
         mul_bf16 = {s, 8'hFF, 23'd0};
      else if (e <= 11'sd0)
         mul_bf16 = {s, 31'd0};
      else
         mul_bf16 = {s, e[7:0], frac};
   end
endfunction
"#;

/// Verilog function `add_f32`.
pub const ADD_F32: &str = r#"
function [31:0] add_f32;
   input [31:0] a;
   input [31:0] b;
   reg a_nan;
   reg b_nan;
   reg a_inf;
   reg b_inf;
   reg a_zero;
   reg b_zero;
   reg swap;
   reg [31:0] x;
   reg [31:0] y;
   reg [7:0] d;
   reg [50:0] mx;
   reg [50:0] my;
   reg sticky;
   reg [50:0] mag;
   reg [5:0] lz;
   reg [50:0] norm;
   reg [24:0] mant;
   reg rnd;
   reg st;
   reg signed [10:0] e;
   integer i;
   begin
      a_nan = (a[30:23] == 8'hFF) && (a[22:0] != 23'd0);
      b_nan = (b[30:23] == 8'hFF) && (b[22:0] != 23'd0);
      a_inf = (a[30:23] == 8'hFF) && (a[22:0] == 23'd0);
      b_inf = (b[30:23] == 8'hFF) && (b[22:0] == 23'd0);
      a_zero = (a[30:23] == 8'd0);
      b_zero = (b[30:23] == 8'd0);
      swap = (b[30:0] > a[30:0]);
      x = swap ? b : a;
      y = swap ? a : b;
      d = x[30:23] - y[30:23];
      mx = {1'b0, 1'b1, x[22:0], 26'd0};
      my = {1'b0, 1'b1, y[22:0], 26'd0};
      sticky = 1'b0;
      if (d > 8'd49) begin
         my = 51'd0;
         sticky = 1'b1;
      end else begin
         for (i = 0; i < 50; i = i + 1)
            if (i < d && my[i]) sticky = 1'b1;
         my = my >> d;
      end
      my[0] = my[0] | sticky;
      if (x[31] == y[31]) mag = mx + my;
      else mag = mx - my;
      lz = 6'd0;
      for (i = 0; i < 51; i = i + 1)
         if (mag[i]) lz = 6'd50 - i[5:0];
      norm = mag << lz;
      mant = {1'b0, norm[50:27]};
      rnd = norm[26];
      st = (norm[25:0] != 26'd0);
      e = $signed({3'b000, x[30:23]}) + 11'sd1 - $signed({5'd0, lz});
      if (rnd && (st || mant[0])) mant = mant + 25'd1;
      if (mant[24]) begin
         mant = mant >> 1;
         e = e + 11'sd1;
      end
      if (a_nan || b_nan || (a_inf && b_inf && (a[31] != b[31])))
         add_f32 = 32'h7FC00000;
      else if (a_inf)
         add_f32 = a;
      else if (b_inf)
         add_f32 = b;
      else if (a_zero && b_zero)
         add_f32 = {a[31] & b[31], 31'd0};
      else if (a_zero)
         add_f32 = b;
      else if (b_zero)
         add_f32 = a;
      else if (mag == 51'd0)
         add_f32 = 32'd0;
      else if (e >= 11'sd255)
         add_f32 = {x[31], 8'hFF, 23'd0};
      else if (e <= 11'sd0)
         add_f32 = {x[31], 31'd0};
      else
         add_f32 = {x[31], e[7:0], mant[22:0]};
   end
endfunction
"#;
