//! The `define_isa!` macro: expands the instruction table (src/table.rs) into the [`Inst`] enum,
//! [`Opcode`], the static [`TABLE`] of [`InstInfo`], the encoder, decoder, operand printer and
//! operand parser. Nothing about an instruction is written anywhere but in its table row.
//!
//! Row syntax:
//! ```text
//! /// doc (markdown; the semantics, precise enough to implement a simulator)
//! Name = OPCODE, "mnemonic", Unit, TimingClass, TypeClass,
//!     (positional: Type = BITS, ...) { keyword: Type = BITS, ... }
//!     [field: Role rule(args), ...];
//! ```
//! The `[ ... ]` clause (left out when the instruction touches no memory) declares each memory
//! operand's role (`Read`, `Write`, `Update`: read and written) and its element type and
//! extent with a constructor of [`crate::roles::rule`] over the row's fields, e.g.
//! `[dst: Write elems(t, n), a: Read elems(t, n)]` (see src/roles.rs).
//! Positional operands print in order (`s1, [s2+4]`), keyword operands as `name=value`.
//! An operand added to an existing instruction goes last and encodes "absent" as 0, so words
//! written before it (whose reserved bits were 0) still decode, as that operand left out.
//! Fields are packed in that order from bit 8 upward. Duplicate opcodes or mnemonics fail to
//! compile (`deny(unreachable_patterns)`), and so does a row wider than 128 bits.

/// See the module docs.
macro_rules! define_isa {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident = $code:literal, $mnem:literal, $unit:ident, $timing:ident, $tc:ident,
        ( $($pf:ident : $pty:ty = $pbits:literal),* $(,)? )
        { $($kf:ident : $kty:ty = $kbits:literal),* $(,)? }
        $( [ $($mf:ident : $mrole:ident $mrule:ident ( $($marg:expr),* ) ),* $(,)? ] )? ;
    )*) => {
        /// One instruction, with its operands (see docs/isa.md for the semantics).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Inst {
            $(
                $(#[doc = $doc])*
                $name { $($pf: $pty,)* $($kf: $kty,)* },
            )*
        }

        /// The opcode of each instruction (its value is the encoded opcode byte).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum Opcode {
            $(
                #[doc = concat!("`", $mnem, "`")]
                $name = $code,
            )*
        }

        /// Row index of each opcode in [`TABLE`] (declaration order).
        #[allow(non_camel_case_types, dead_code)]
        enum Row { $($name,)* }

        $(
            #[allow(clippy::int_plus_one)]
            const _: () = assert!(
                $crate::word::OPCODE_BITS $(+ $pbits)* $(+ $kbits)* <= $crate::word::WORD_BITS,
                concat!("instruction `", $mnem, "` is wider than 128 bits")
            );
        )*

        $(
            #[allow(unused_comparisons)]
            const _: () = assert!(
                0 $($(+ { let _ = stringify!($mf); 1 })*)? <= $crate::roles::MAX_USES,
                concat!("instruction `", $mnem, "` has more memory operands than roles::MAX_USES")
            );
        )*

        /// The instruction table: one row per instruction, in declaration order.
        pub static TABLE: &[InstInfo] = &[
            $(
                InstInfo {
                    opcode: Opcode::$name,
                    name: stringify!($name),
                    mnemonic: $mnem,
                    unit: Unit::$unit,
                    timing: TimingClass::$timing,
                    types: TypeClass::$tc,
                    doc: concat!($($doc, "\n",)*),
                    fields: &[
                        $(FieldInfo {
                            name: stringify!($pf),
                            kind: <$pty as Operand>::KIND,
                            bits: $pbits,
                            keyword: false,
                            optional: false,
                        },)*
                        $(FieldInfo {
                            name: stringify!($kf),
                            kind: <$kty as Operand>::KIND,
                            bits: $kbits,
                            keyword: true,
                            optional: <$kty as Operand>::OPTIONAL,
                        },)*
                    ],
                    uses: &[$($(
                        $crate::roles::UseInfo {
                            field: stringify!($mf),
                            role: $crate::inst::Role::$mrole,
                            rule: concat!(stringify!($mrule), "(", stringify!($($marg),*), ")"),
                        },
                    )*)?],
                },
            )*
        ];

        impl Opcode {
            /// Every opcode, in table order.
            pub const ALL: &'static [Opcode] = &[$(Opcode::$name,)*];

            /// The opcode with encoded byte `code`.
            #[deny(unreachable_patterns)]
            pub fn from_code(code: u8) -> Option<Opcode> {
                match code {
                    $($code => Some(Opcode::$name),)*
                    _ => None,
                }
            }

            /// The opcode with assembly mnemonic `m`.
            #[deny(unreachable_patterns)]
            pub fn from_mnemonic(m: &str) -> Option<Opcode> {
                match m {
                    $($mnem => Some(Opcode::$name),)*
                    _ => None,
                }
            }

            /// This opcode's table row.
            pub fn info(self) -> &'static InstInfo {
                match self {
                    $(Opcode::$name => &TABLE[Row::$name as usize],)*
                }
            }

            /// Assembly mnemonic.
            pub fn mnemonic(self) -> &'static str {
                match self { $(Opcode::$name => $mnem,)* }
            }

            /// Unit that executes it.
            pub fn unit(self) -> Unit {
                match self { $(Opcode::$name => Unit::$unit,)* }
            }

            /// Timing class.
            pub fn timing(self) -> TimingClass {
                match self { $(Opcode::$name => TimingClass::$timing,)* }
            }

            /// The positions among the positional operands of `lim` and `idx` (a scattered
            /// or indexed operand's limit register and index table), if the row has them:
            /// constants the macro works out at compile time.
            pub(crate) fn lim_idx_positions(self) -> (Option<usize>, Option<usize>) {
                match self {
                    $(Opcode::$name => {
                        const P: (Option<usize>, Option<usize>) = {
                            let pos: &[&str] = &[$(stringify!($pf)),*];
                            (
                                $crate::roles::find_position("lim", pos),
                                $crate::roles::find_position("idx", pos),
                            )
                        };
                        P
                    })*
                }
            }
        }

        impl Inst {
            /// The opcode.
            pub fn opcode(&self) -> Opcode {
                match self { $(Inst::$name { .. } => Opcode::$name,)* }
            }

            /// Encodes into one 128-bit word; fails if an operand does not fit its field.
            pub fn encode(&self) -> Result<$crate::word::Word, $crate::word::EncodeError> {
                #[allow(unused_mut)]
                let mut w = $crate::word::Writer::new(self.opcode() as u8, self.opcode().mnemonic());
                match *self {
                    $(
                        Inst::$name { $($pf,)* $($kf,)* } => {
                            $(w.put(stringify!($pf), $pf, $pbits)?;)*
                            $(w.put(stringify!($kf), $kf, $kbits)?;)*
                        }
                    )*
                }
                Ok(w.finish())
            }

            /// Decodes one word; rejects unknown opcodes, invalid fields and non-zero reserved bits.
            pub fn decode(word: $crate::word::Word) -> Result<Inst, $crate::word::DecodeError> {
                let mut r = $crate::word::Reader::new(word);
                let code = r.opcode();
                let op = Opcode::from_code(code).ok_or($crate::word::DecodeError::UnknownOpcode(code))?;
                r.mnemonic = op.mnemonic();
                let inst = match op {
                    $(
                        Opcode::$name => Inst::$name {
                            $($pf: r.get(stringify!($pf), $pbits)?,)*
                            $($kf: r.get(stringify!($kf), $kbits)?,)*
                        },
                    )*
                };
                r.finish()?;
                Ok(inst)
            }

            /// Assembly text of the operands (without the mnemonic): positional operands, then
            /// `name=value` for keyword operands that are not at their default.
            pub fn fmt_operands(&self, ctx: &FmtCtx) -> String {
                #[allow(unused_mut)]
                let mut parts: Vec<String> = Vec::new();
                match self {
                    $(
                        Inst::$name { $($pf,)* $($kf,)* } => {
                            $(parts.push(Operand::fmt_asm($pf, ctx));)*
                            $(
                                if <$kty as Operand>::default_value().as_ref() != Some($kf) {
                                    parts.push(format!("{}={}", stringify!($kf), Operand::fmt_asm($kf, ctx)));
                                }
                            )*
                        }
                    )*
                }
                parts.join(", ")
            }

            /// Builds an instruction from its operand tokens (see [`crate::asm`]).
            pub(crate) fn from_tokens(
                op: Opcode,
                toks: &mut $crate::asm::OperandTokens<'_>,
                ctx: &ParseCtx,
            ) -> Result<Inst, $crate::asm::TokError> {
                match op {
                    $(
                        Opcode::$name => {
                            $(let $pf: $pty = toks.positional(stringify!($pf), ctx)?;)*
                            toks.no_more_positional()?;
                            $(let $kf: $kty = toks.keyword(stringify!($kf), ctx)?;)*
                            toks.no_more_keywords()?;
                            Ok(Inst::$name { $($pf,)* $($kf,)* })
                        }
                    )*
                }
            }

            /// Checks element types against the instruction's [`TypeClass`].
            pub fn check_types(&self) -> Result<(), String> {
                #[allow(unused_variables)]
                match self {
                    $(
                        Inst::$name { $($pf,)* $($kf,)* } => {
                            $(check_dtype($mnem, stringify!($pf), Operand::as_dtype($pf), TypeClass::$tc)?;)*
                            $(check_dtype($mnem, stringify!($kf), Operand::as_dtype($kf), TypeClass::$tc)?;)*
                            Ok(())
                        }
                    )*
                }
            }

            /// The memory operands of this instruction with their role, element type and extent,
            /// as its table row's `[ ... ]` clause declares them (src/roles.rs).
            pub fn operand_uses(&self) -> $crate::roles::UseList<$crate::roles::OperandUse> {
                #[allow(unused_imports)]
                use $crate::roles::rule::*;
                #[allow(unused_variables)]
                let pat = self.pat().map(|p| p.0);
                #[allow(unused_mut)]
                let mut out = $crate::roles::UseList::new();
                #[allow(unused_variables)]
                match *self {
                    $(
                        Inst::$name { $($pf,)* $($kf,)* } => {
                            #[allow(dead_code)]
                            const POSITIONAL: &[&str] = &[$(stringify!($pf)),*];
                            $($(
                                let (elem, extent) = $mrule($($marg),*);
                                out.push($crate::roles::OperandUse {
                                    field: stringify!($mf),
                                    position: {
                                        const P: usize =
                                            $crate::roles::position_of(stringify!($mf), POSITIONAL);
                                        P
                                    },
                                    role: $crate::inst::Role::$mrole,
                                    elem,
                                    extent,
                                    space: Operand::mem_space(&$mf).unwrap_or($crate::operand::Space::Vmem),
                                    pattern: pat,
                                });
                            )*)?
                        }
                    )*
                }
                out
            }

            /// The positional operands' VMEM addresses (`None` for other kinds), in order.
            pub(crate) fn positional_vaddrs(&self) -> Vec<Option<VAddr>> {
                #[allow(unused_variables)]
                match self {
                    $(Inst::$name { $($pf,)* .. } => vec![$(Operand::as_vaddr($pf),)*],)*
                }
            }

            /// The `pat=` operand (address pattern), if the instruction has one and it is set.
            pub fn pat(&self) -> Option<$crate::operand::Pat> {
                let mut out = None;
                #[allow(unused_variables)]
                match self {
                    $(
                        Inst::$name { $($kf,)* .. } => {
                            $(
                                if let Some(p) = Operand::as_pat($kf) {
                                    out = p;
                                }
                            )*
                        }
                    )*
                }
                out
            }

            /// The values a unit reads at dispatch, one per positional operand in order (up to
            /// four): memory operands' byte addresses, accumulator rows, registers' values.
            #[allow(unused_assignments)]
            pub fn resolve(&self, regs: &[u64; 32]) -> Result<[u64; 4], String> {
                let mut out = [0u64; 4];
                #[allow(unused_mut, unused_variables, unused_assignments)]
                let mut i = 0usize;
                #[allow(unused_variables)]
                match self {
                    $(
                        Inst::$name { $($pf,)* .. } => {
                            $(
                                if let Some(v) = Operand::resolve($pf, regs) {
                                    if i < 4 {
                                        out[i] = v?;
                                    }
                                }
                                i += 1;
                            )*
                        }
                    )*
                }
                Ok(out)
            }

            /// The `wait=` and `signal=` semaphores of a unit instruction (`(None, None)` for
            /// sequencer instructions).
            pub fn sync(&self) -> (Option<Sem>, Option<Sem>) {
                let (mut wait, mut signal) = (None, None);
                #[allow(unused_variables)]
                match self {
                    $(
                        Inst::$name { $($kf,)* .. } => {
                            $(
                                if let Some(v) = Operand::as_opt_sem($kf) {
                                    match stringify!($kf) {
                                        "wait" => wait = v,
                                        "signal" => signal = v,
                                        _ => {}
                                    }
                                }
                            )*
                        }
                    )*
                }
                (wait, signal)
            }

            /// Sets the `pat=` operand; returns false if the instruction has none.
            pub fn set_pat(&mut self, pat: Option<$crate::operand::Pat>) -> bool {
                let mut found = false;
                #[allow(unused_variables)]
                match self {
                    $(
                        Inst::$name { $($kf,)* .. } => {
                            $(
                                Operand::visit_pat($kf, &mut |p| {
                                    *p = pat;
                                    found = true;
                                });
                            )*
                        }
                    )*
                }
                found
            }

            /// Sets the `signal=` (`which = "signal"`) or `wait=` (`"wait"`) semaphore of a unit
            /// instruction; returns false if the instruction has no such operand.
            pub fn set_sync(&mut self, which: &str, sem: Option<Sem>) -> bool {
                let mut found = false;
                #[allow(unused_variables)]
                match self {
                    $(
                        Inst::$name { $($kf,)* .. } => {
                            $(
                                if stringify!($kf) == which {
                                    Operand::visit_opt_sem($kf, &mut |s| {
                                        *s = sem;
                                        found = true;
                                    });
                                }
                            )*
                        }
                    )*
                }
                found
            }

            /// Calls `f` on every branch target operand.
            pub fn for_each_target(&mut self, f: &mut dyn FnMut(&mut Target)) {
                #[allow(unused_variables)]
                match self {
                    $(
                        Inst::$name { $($pf,)* $($kf,)* } => {
                            $(Operand::visit_target($pf, f);)*
                            $(Operand::visit_target($kf, f);)*
                        }
                    )*
                }
            }
        }

        /// Random instructions (every opcode, every operand in range, element types valid).
        #[cfg(any(test, feature = "arbitrary"))]
        pub fn arbitrary_inst() -> proptest::strategy::BoxedStrategy<Inst> {
            use proptest::prelude::*;
            let rows: Vec<proptest::strategy::BoxedStrategy<Inst>> = vec![
                $(
                    {
                        let s = (Just(()), $(<$pty as Operand>::strategy($pbits, TypeClass::$tc),)* $(<$kty as Operand>::strategy($kbits, TypeClass::$tc),)*);
                        #[allow(unused_parens, non_snake_case)]
                        s.prop_map(|((), $($pf,)* $($kf,)*)| Inst::$name { $($pf,)* $($kf,)* }).boxed()
                    },
                )*
            ];
            proptest::strategy::Union::new(rows).boxed()
        }
    };
}
