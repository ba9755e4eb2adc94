"""float32 math functions emitted inline as LLVM IR, so they vectorize (no libm call per lane):
the unary ``FUNCS`` and the binary ``atan2`` (DCCRN's complex-mask phase, PointPillars' azimuth).

Each function works the same on scalars and vectors: range reduction, a polynomial evaluated
with FMAs, and selects for the special values (inf, NaN, zero, under/overflow). The same code
serves vector bodies and scalar tails, so a kernel's result does not depend on its vector width.
Polynomial coefficients were fitted here (weighted least squares on Chebyshev nodes, float64) to
the function's series around the reduced range. Measured maximum relative error against float64
references is asserted in tests/codegen/test_vmath.py (all about 2-4e-7, i.e. a few ulp).
"""

from __future__ import annotations

import math

from llvmlite import ir

from . import types as T

# e^r = 1 + Q(r), Q of degree 6 without constant term, on |r| <= ln2/2 (relative error 2e-9 in
# float64, 9.6e-8 evaluated in float32): six FMAs by Horner's rule. (The degree-7 form
# 1 + r + r^2 P(r) took eight operations; Zen 4, one thread, 1.2M floats: sigmoid 484 -> 444 us,
# SiLU 501 -> 423 us.)
_EXP_Q = (1.0, 1.0000000320933322, 0.49999994254437197, 0.16666431432356504,
          0.04166798975649454, 0.008374145985090602, 0.0013844390492790638)
# exp's scaling by vector ISA: AVX-512 hosts keep the rint / convert / select form (their vectors
# scale by vscalefps), AVX2 hosts take ``_exp_magic`` (no select after the polynomial, the
# degree-5 ``_EXP_Q5``). Zen 3, one thread, thread CPU time, 1x12x128x128 float32, A/B in
# alternating processes (``bench_vmath``), us, degree 6 (before ``_EXP_Q5``): exp 111 -> 90,
# sigmoid 135 -> 109, SiLU 139 -> 113, softmax 157 -> 138 (ORT 97-117, 86-93, 115-128, 117-126).
_EXP_MAGIC = {"avx512": False, "avx2": True}
# e^r = 1 + Q5(r), degree 5, for ``_exp_magic``: fitted as the others minimizing the maximum
# relative error on |r| <= ln2/2 (9.2e-8 in float64; exp 1.6e-7 in float32 where ``_EXP_Q`` has
# 8.5e-8, sigmoid 2.4e-7 where 1.5e-7: 2M points), one FMA fewer. Zen 3, one thread, 1x12x128x128,
# A/B in alternating processes, us: exp 91 -> 82 and 100 -> 87.
_EXP_Q5 = (1.0, 0.9999997063093403, 0.4999914783732889, 0.16667638139210103,
           0.04189815998103939, 0.008290271364703089)
_LN2_HI, _LN2_LO = 0.693359375, -2.1219444005469057e-04  # ln 2 = hi + lo, hi has 9 bits
# log1p(f) = 2s + s R(s^2), s = f / (2 + f): the atanh series, R = sum 2 z^k / (2k + 1)
_LOG_R = (2.0 / 3, 2.0 / 5, 2.0 / 7, 2.0 / 9, 2.0 / 11)
# tanh(x) = x + x^3 P(x^2) for |x| < 0.625
_TANH_P = (-0.33333331010616385, 0.13333212509111553, -0.0539474549521113,
           0.021704004132090116, -0.008184669901249692, 0.002148990943961284)
# tanh(x) = x P(x^2) / Q(x^2) for |x| <= 9 (beyond, tanh rounds to +-1 within 6e-8): one rational
# with no exp and no division by e^2x + 1, fitted as erf's below with P(0) = 1 held (tanh(x) is
# x for tiny x, bit for bit): 6.2e-8 in float64, 3.3e-7 in float32 (Horner's roundings where the
# result is next to 1, at |x| about 7), by vector ISA (``_isa``). Zen 3, one thread, thread CPU
# time, 1x12x128x128 float32, A/B in alternating processes, us: tanh 168 -> 77 (ORT 80-94).
# AVX-512 keeps the exp form: not measured there.
_TANH_RATIONAL = {"avx512": False, "avx2": True}
_TANH_CLAMP = 9.0
_TANH_RP = (1.0, 0.1292253398149653, 0.0029241681028312396, 9.29571839229888e-06,
            -1.2855000449738647e-08, 1.84205784306557e-11)
_TANH_RQ = (1.0, 0.462558342130245, 0.023777506353058066, 0.00022855203117619412)
# erf(x) = x P(x^2) for |x| < 1
_ERF_P = (1.1283791665095693, -0.3761262884223104, 0.11283612420613667, -0.026854808300298738,
          0.0051900532119268095, -0.0008024351373899091, 7.898202142181399e-05)
# erfc(x) exp(x^2) = Q(1/x) for 1 <= x <= 4
_ERFC_Q = (0.0006902119372686605, 0.5533681737162753, 0.07495535430926767,
           -0.5789284491151514, 0.7112290690260474, -0.5107825892742707, 0.23088512918492116,
           -0.0610709540478285, 0.007237630384518801)
# erf(x) = x P(x^2) / Q(x^2) for |x| <= 3.92 (beyond, erf rounds to +-1 within 4e-8): one
# rational on the whole range, no exp and no second polynomial (fitted as the others, minimizing
# the maximum relative error by reweighted linear least squares: 5.2e-8 in float64; 3.3e-7 in
# float32, its two Horner chains' roundings near erf = 1, where the two-branch form had 1.8e-7),
# by vector ISA (``_isa``). Zen 3 (AVX2), one thread, thread CPU time, 128x3072 float32,
# us (``bench_vmath``, ORT's): erf 421 -> 160 (306), GELU 474 -> 210 (600); BERT-base's FFN
# dense + bias + GELU 128x768 -> 3072 (``bench_gemm_shapes --only bert_ffn1``) 7280 -> 6965.
# AVX-512 keeps the two-branch form (its exp is a vscalefps): not measured there.
_ERF_RATIONAL = {"avx512": False, "avx2": True}
_ERF_CLAMP = 3.92
_ERF_RP = (1.1283791090531197, 0.199923035114194, 0.05057310860666265, 0.0037015253912313748,
           0.00014184692036015438, -1.957790124495055e-06, 1.992374086911953e-08)
_ERF_RQ = (1.0, 0.5105088327621303, 0.11499777517032138, 0.014353054509649889,
           0.0009560135065677407)

# sin(r) = r + r^3 S(r^2) and cos(r) = 1 - r^2/2 + r^4 C(r^2) on |r| <= pi/4 (relative errors
# 4e-9 and 1.2e-10 in float64)
_SIN_S = (-0.16666655140118594, 0.008332186532873813, -0.00019518151367058553)
_COS_C = (0.04166664559061913, -0.0013887312834857917, 2.4432844618880687e-05)
# pi/2 = P1 + P2 + P3: P1 and P2 with 12 significant bits, so n * P1 and n * P2 are exact for
# integers |n| <= 4096 (the Cody-Waite reduction x - n pi/2 loses nothing to them); P3 is the
# float32 rounding of the exact remainder (from pi/2 to 50 digits, not float64's pi/2: that
# one's error of 6e-17, times n, made results near the zeros 2e-6 off)
_PIO2 = (1.57080078125, -4.453584551811218e-06, -8.705515752716053e-10)
_TRIG_LIMIT = 6000.0  # |x| beyond (n > 3820), inf and NaN: libm
# asin(a) = a + a^3 P(a^2) on |a| <= 0.5 (for larger |a|, a = sqrt((1 - |x|) / 2)), and
# atan(t) = t + t^3 Q(t^2) on |t| <= tan(pi/8) (Cephes' single-precision asinf / atanf forms)
_ASIN_P = (1.6666752422e-1, 7.4953002686e-2, 4.5470025998e-2, 2.4181311049e-2,
           4.2163199048e-2)
_ATAN_Q = (-3.33329491539e-1, 1.99777106478e-1, -1.38776856032e-1, 8.05374449538e-2)
# pi/2, pi/4 and pi as float32 plus the float32 rounding of the rest, added last
_HALF_PI = (1.5707963705062866, -4.371139006309477e-08)
_QUARTER_PI = (0.7853981852531433, -2.1855695031547384e-08)
_PI = (3.1415927410125732, -8.742278012618954e-08)

FUNCS = ("exp", "log", "tanh", "erf", "sigmoid", "sin", "cos", "asin", "acos", "atan")


class _Emit:
    """Small IR helpers bound to one builder and one float32 (vector) type."""

    def __init__(self, cg, ty: ir.Type):
        self.cg, self.b, self.ty = cg, cg.builder, ty
        lanes = ty.count if isinstance(ty, ir.VectorType) else 1
        self.ity = ir.VectorType(T.I32, lanes) if lanes > 1 else T.I32
        self.f = cg.fmf

    def c(self, v: float) -> ir.Constant:
        return T.const(self.ty, float(v))

    def ci(self, v: int) -> ir.Constant:
        return T.const(self.ity, int(v))

    def add(self, a, b):
        return self.b.fadd(a, b, flags=self.f)

    def sub(self, a, b):
        return self.b.fsub(a, b, flags=self.f)

    def mul(self, a, b):
        return self.b.fmul(a, b, flags=self.f)

    def div(self, a, b):
        return self.b.fdiv(a, b, flags=self.f)

    def fma(self, a, b, c):
        return self.cg._intrin("llvm.fma", [a, b, c])

    def poly(self, x, coeffs):
        """``coeffs[0] + coeffs[1] x + ...`` by Horner's rule with FMAs."""
        acc = self.c(coeffs[-1])
        for k in range(len(coeffs) - 2, -1, -1):
            acc = self.fma(acc, x, self.c(coeffs[k]))
        return acc

    def cmp(self, op: str, a, b):
        return self.b.fcmp_ordered(op, a, b)

    def sel(self, cond, a, b):
        return self.b.select(cond, a, b)

    def fabs(self, x):
        return self.cg._intrin("llvm.fabs", [x])

    def copysign(self, mag, sign):
        return self.cg._intrin("llvm.copysign", [mag, sign])

    def pow2(self, n_int):
        """2**n for integer n in [-126, 127], built from the exponent bits."""
        bits = self.b.shl(self.b.add(n_int, self.ci(127)), self.ci(23))
        return self.b.bitcast(bits, self.ty)


def _host_scalef() -> tuple[bool, bool]:
    """(512-bit, 128/256-bit) ``vscalefps`` on the host: AVX-512F, AVX-512VL."""
    from ...runtime.jit import host_has

    return host_has("avx512f"), host_has("avx512f", "avx512vl")


def _scalef(m: _Emit, p, n, keep=None):
    """``p * 2**floor(n)`` by AVX-512's ``vscalefps`` (one instruction, rounding once: overflow
    gives inf, small results are denormal, NaN propagates), or None where the host or the
    vector width has no such instruction. Wider vectors run as 16-lane pieces. ``keep`` (an
    i1 per lane): lanes where it is false are 0, by the instruction's zeroing mask (a masked
    lane computes nothing, so it cannot take a denormal's microcode assist)."""
    lanes = m.ty.count if isinstance(m.ty, ir.VectorType) else 1
    f512, vl = _host_scalef()
    if lanes % 16 == 0 and f512:
        width, suffix, mty = 16, "512", ir.IntType(16)
    elif lanes in (4, 8) and vl:
        width, suffix, mty = lanes, str(32 * lanes), ir.IntType(8)
    else:
        return None
    vt = ir.VectorType(ir.FloatType(), width)
    fn = m.cg._declare(f"llvm.x86.avx512.mask.scalef.ps.{suffix}", vt,
                       [vt, vt, vt, mty] + ([T.I32] if width == 16 else []))
    zero = ir.Constant(vt, [0.0] * width)

    def piece(v, k):
        if lanes == width:
            return v
        return m.b.shuffle_vector(v, v, ir.Constant(ir.VectorType(T.I32, width),
                                                    [k * width + j for j in range(width)]))

    def mask_bits(k):
        if keep is None:
            return ir.Constant(mty, -1)
        bits = piece(keep, k)
        if width == 4:  # (an i8 mask: the upper four lanes false)
            bits = m.b.shuffle_vector(bits, ir.Constant(bits.type, [0] * 4),
                                      ir.Constant(ir.VectorType(T.I32, 8), list(range(8))))
        return m.b.bitcast(bits, mty)

    def call(k):
        args = [piece(p, k), piece(n, k), zero if keep is not None else piece(p, k),
                mask_bits(k)]
        return m.b.call(fn, args + ([T.I32(4)] if width == 16 else []))

    if lanes == width:
        return call(0)
    whole = T.concat_vectors(m.b, [call(k) for k in range(lanes // width)])
    if whole.type.count == lanes:
        return whole
    return m.b.shuffle_vector(whole, whole, ir.Constant(ir.VectorType(T.I32, lanes),
                                                        list(range(lanes))))


# below this exp rounds to 0 in float32 (it is 2**-150, half the least denormal: ties to even)
_EXP_ZERO_BELOW = -103.97208404541016


def _exp(m: _Emit, x):
    if _EXP_MAGIC[_isa()]:
        return _exp_magic(m, x)
    b = m.b
    # Lanes whose result is 0 are zeroed, not computed: clamped to the underflow edge they
    # made a denormal in the scaling, which Intel cores finish in a microcode assist of about
    # a hundred cycles. A causal softmax's masked lanes are all like that (exp(-inf - max)).
    # Rocket Lake, one thread, A/B in one process, (1, 4, 64, 64) float32, us: softmax of
    # causal rows 59.7 -> 8.6, exp of x - 300 83.3 -> 4.5 (finite rows unchanged)
    zero = m.cmp("<", x, m.c(_EXP_ZERO_BELOW))
    # (the clamps keep a NaN: an ordered compare with it is false)
    xc = m.sel(m.cmp(">", x, m.c(88.8)), m.c(88.8), x)
    xc = m.sel(m.cmp("<", xc, m.c(-104.0)), m.c(-104.0), xc)
    n = m.cg._intrin("llvm.rint", [m.mul(xc, m.c(1.4426950408889634))])
    r = m.fma(n, m.c(-_LN2_HI), xc)
    r = m.fma(n, m.c(-_LN2_LO), r)
    p = m.poly(r, _EXP_Q)
    # (kept: the other lanes, NaN among them)
    scaled = _scalef(m, p, n, keep=b.fcmp_unordered(">=", x, m.c(_EXP_ZERO_BELOW)))
    if scaled is not None:
        # overflow (x > 88.72) to inf, underflow to denormals and 0, NaN: all by vscalefps, in
        # half the instructions of the integer scaling below. Zen 4, one thread, 1.2M floats:
        # exp 531 -> 339 us, sigmoid 605 -> 471 us, tanh 794 -> 563 us (ONNX Runtime's 239,
        # 360, 426 us; ``benchmarks/bench_vmath.py``)
        return scaled
    # (the zeroed lanes scale 2**0 here: no denormal on the way to their 0)
    ni = b.select(zero, m.ci(0), b.fptosi(n, m.ity))
    n1 = b.ashr(ni, m.ci(1))
    # two scale factors keep 2**n normal at both ends (results near FLT_MAX and denormals)
    res = m.mul(m.mul(p, m.pow2(n1)), m.pow2(b.sub(ni, n1)))
    res = m.sel(m.cmp(">", x, m.c(88.72283935546875)), m.c(math.inf), res)
    res = m.sel(zero, m.c(0.0), res)
    return m.sel(b.fcmp_unordered("uno", x, x), x, res)


# 1.5 * 2**23: a float32 in [2**23, 2**24) has integer spacing, so adding it rounds to the
# nearest integer (ties to even) and leaves that integer in the low mantissa bits
_ROUND_MAGIC = 12582912.0


def _exp_magic(m: _Emit, x):
    """exp without a select after the polynomial: every special value comes out of the
    arithmetic. x clamped to [-104, 88.8] (NaN kept); n = rint(x / ln2) by the magic-number
    add (its bits hold n, so 2**(n/2) is a shift of them, with no float -> int conversion);
    p * 2**floor(n/2) * 2**ceil(n/2) overflows to inf past 88.72, rounds once to denormals
    and to 0 below -103.97, and a NaN p stays NaN. Lanes below the underflow edge have p = 0
    (no denormal operand: Intel's microcode assist, see ``_exp``'s note)."""
    b = m.b
    zero = m.cmp("<", x, m.c(_EXP_ZERO_BELOW))
    xc = m.sel(m.cmp(">", x, m.c(88.8)), m.c(88.8), x)
    xc = m.sel(m.cmp("<", xc, m.c(-104.0)), m.c(-104.0), xc)
    t = m.fma(xc, m.c(1.4426950408889634), m.c(_ROUND_MAGIC))
    n = b.fsub(t, m.c(_ROUND_MAGIC))  # (exact; no fast-math flags to fold it with t's add)
    r = m.fma(n, m.c(-_LN2_HI), xc)
    r = m.fma(n, m.c(-_LN2_LO), r)
    p = m.sel(zero, m.c(0.0), m.poly(r, _EXP_Q5))
    # t's bits are bits(magic) + n, bits(magic) even with its low 9 bits 0: shifted left by 23
    # after adding the exponent bias, bits(magic) and bits(magic) / 2 drop out
    tb = b.bitcast(t, m.ity)
    half = b.ashr(tb, m.ci(1))                   # bits(magic) / 2 + floor(n / 2)
    lo = b.shl(b.add(half, m.ci(127)), m.ci(23))  # 2**floor(n / 2)
    hi = b.shl(b.add(b.sub(tb, half), m.ci(127)), m.ci(23))  # 2**ceil(n / 2)
    return m.mul(m.mul(p, b.bitcast(lo, m.ty)), b.bitcast(hi, m.ty))


def _log(m: _Emit, x):
    b = m.b
    tiny = m.cmp("<", x, m.c(1.1754943508222875e-38))
    xs = m.sel(tiny, m.mul(x, m.c(8388608.0)), x)  # denormals: scale by 2**23 first
    bits = b.bitcast(xs, m.ity)
    e = b.sub(b.lshr(bits, m.ci(23)), m.ci(127))
    e = b.sub(e, b.select(tiny, m.ci(23), m.ci(0)))
    mant = b.bitcast(b.or_(b.and_(bits, m.ci(0x007FFFFF)), m.ci(0x3F800000)), m.ty)
    big = m.cmp(">", mant, m.c(1.4142135623730951))
    mant = m.sel(big, m.mul(mant, m.c(0.5)), mant)
    e = b.add(e, b.zext(big, m.ity))
    f = m.sub(mant, m.c(1.0))
    s = m.div(f, m.add(f, m.c(2.0)))
    z = m.mul(s, s)
    r = m.mul(z, m.poly(z, _LOG_R))
    hfsq = m.mul(m.mul(f, f), m.c(0.5))
    log1p = m.sub(f, m.sub(hfsq, m.mul(s, m.add(hfsq, r))))
    ef = b.sitofp(e, m.ty)
    res = m.fma(ef, m.c(_LN2_HI), m.fma(ef, m.c(_LN2_LO), log1p))
    res = m.sel(m.cmp("==", x, m.c(math.inf)), x, res)
    res = m.sel(m.cmp("==", x, m.c(0.0)), m.c(-math.inf), res)
    return m.sel(b.fcmp_unordered("<", x, m.c(0.0)), m.c(math.nan), res)


def _tanh(m: _Emit, x):
    ax = m.fabs(x)
    if _TANH_RATIONAL[_isa()]:
        a = m.sel(m.cmp(">", ax, m.c(_TANH_CLAMP)), m.c(_TANH_CLAMP), ax)  # (NaN kept)
        z = m.mul(a, a)
        r = m.div(m.mul(a, m.poly(z, _TANH_RP)), m.poly(z, _TANH_RQ))
        # (never above 1; the sign from x, -0.0 included)
        return m.copysign(m.sel(m.cmp(">", r, m.c(1.0)), m.c(1.0), r), x)
    z = m.mul(x, x)
    small = m.fma(m.mul(x, z), m.poly(z, _TANH_P), x)
    e = _exp(m, m.add(ax, ax))
    large = m.sub(m.c(1.0), m.div(m.c(2.0), m.add(e, m.c(1.0))))
    # both odd functions: the sign comes from x also for -0.0 (the polynomial's sign of zero
    # does not survive the fast-math flags the loop is compiled with)
    return m.copysign(m.sel(m.cmp("<", ax, m.c(0.625)), small, large), x)


def _isa() -> str:
    """The vector ISA whose ``_ERF_RATIONAL``, ``_TANH_RATIONAL`` and ``_EXP_MAGIC`` entries
    apply: the CPU code is made for."""
    from ...runtime.jit import host_has

    return "avx512" if host_has("avx512f") else "avx2"


def _erf(m: _Emit, x):
    ax = m.fabs(x)
    if _ERF_RATIONAL[_isa()]:
        a = m.sel(m.cmp(">", ax, m.c(_ERF_CLAMP)), m.c(_ERF_CLAMP), ax)  # (NaN kept)
        z = m.mul(a, a)
        r = m.div(m.mul(a, m.poly(z, _ERF_RP)), m.poly(z, _ERF_RQ))
        # (never above 1; the sign from x, -0.0 included, as tanh's)
        return m.copysign(m.sel(m.cmp(">", r, m.c(1.0)), m.c(1.0), r), x)
    z = m.mul(x, x)
    small = m.mul(x, m.poly(z, _ERF_P))
    q = m.poly(m.div(m.c(1.0), ax), _ERFC_Q)
    large = m.sub(m.c(1.0), m.mul(_exp(m, m.b.fneg(z)), q))
    return m.copysign(m.sel(m.cmp("<", ax, m.c(1.0)), small, large), x)


def _sigmoid(m: _Emit, x):
    # (a reciprocal estimate and a Newton step instead of the division, on exp(-|x|) to keep
    # the denominator finite, measured 28% slower on a Zen 4: the divider is not the limit)
    one = m.c(1.0)
    return m.div(one, m.add(one, _exp(m, m.b.fneg(x))))


def _sincos(m: _Emit, x, name: str):
    """``sin`` or ``cos`` of float32 ``x``: n = rint(x 2/pi), r = x - n pi/2 in three FMAs,
    the sine or cosine polynomial of r by the quadrant, its sign flipped in quadrants 2 and 3.
    Where any lane is beyond +-6000 (or inf, NaN) the whole value comes from llvm.sin/cos
    (libm per lane) instead, on a branch a vector of ordinary inputs never takes."""
    n = m.cg._intrin("llvm.nearbyint", [m.mul(x, m.c(2 / math.pi))])
    r = x
    for part in _PIO2:
        r = m.fma(n, m.c(-part), r)
    z = m.mul(r, r)
    s = m.fma(m.mul(r, z), m.poly(z, _SIN_S), r)
    c = m.fma(m.mul(z, z), m.poly(z, _COS_C), m.fma(z, m.c(-0.5), m.c(1.0)))
    q = m.b.fptosi(n, m.ity)
    if name == "cos":  # cos(x) = sin(x + pi/2): one quadrant on
        q = m.b.add(q, m.ci(1))
    odd = m.b.icmp_signed("!=", m.b.and_(q, m.ci(1)), m.ci(0))
    flip = m.b.shl(m.b.and_(q, m.ci(2)), m.ci(30))  # quadrants 2, 3: the sign bit
    fast = m.b.bitcast(m.b.xor(m.b.bitcast(m.sel(odd, c, s), m.ity), flip), m.ty)
    # any lane out of the reduction's range (the unordered compare takes NaN too; inf and NaN
    # would come out NaN from the fast path as well)
    bad = m.b.fcmp_unordered(">", m.fabs(x), m.c(_TRIG_LIMIT))
    if isinstance(m.ty, ir.VectorType):
        fn = m.cg._declare(f"llvm.vector.reduce.or.{T.mangle(bad.type)}", ir.IntType(1),
                           [bad.type])
        bad = m.b.call(fn, [bad])
    bld = m.b
    fast_end = bld.block
    slow_bb = bld.append_basic_block(f"{name}.libm")
    end_bb = bld.append_basic_block(f"{name}.end")
    bld.cbranch(bad, slow_bb, end_bb)
    bld.position_at_end(slow_bb)
    slow = m.cg._intrin(f"llvm.{name}", [x])
    slow_end = bld.block
    bld.branch(end_bb)
    bld.position_at_end(end_bb)
    phi = bld.phi(m.ty)
    phi.add_incoming(fast, fast_end)
    phi.add_incoming(slow, slow_end)
    return phi


def _asin_parts(m: _Emit, x):
    """(r, big) for float32 ``x``: r = asin(|x|) for |x| <= 0.5, else r = asin(sqrt((1 - |x|)
    / 2)), so that asin(|x|) = pi/2 - 2r there; big says which. |x| > 1 gives NaN (sqrt of a
    negative), NaN stays NaN."""
    ax = m.fabs(x)
    big = m.cmp(">", ax, m.c(0.5))
    z = m.sel(big, m.mul(m.sub(m.c(1.0), ax), m.c(0.5)), m.mul(ax, ax))
    s = m.sel(big, m.cg._intrin("llvm.sqrt", [z]), ax)
    r = m.fma(m.mul(s, z), m.poly(z, _ASIN_P), s)
    return r, big


def _asin(m: _Emit, x):
    r, big = _asin_parts(m, x)
    hi, lo = _HALF_PI
    wide = m.add(m.fma(r, m.c(-2.0), m.c(hi)), m.c(lo))
    out = m.copysign(m.sel(big, wide, r), x)
    return m.sel(m.cmp(">", m.fabs(x), m.c(1.0)), m.c(math.nan), out)


def _acos(m: _Emit, x):
    """acos(x) = pi/2 - asin(x) for |x| <= 0.5; 2r for x > 0.5 and pi - 2r for x < -0.5 (r as
    in ``_asin_parts``), with no cancellation next to +-1."""
    r, big = _asin_parts(m, x)
    neg = m.cmp("<", x, m.c(0.0))
    two_r = m.add(r, r)
    near_minus_one = m.add(m.sub(m.c(_PI[0]), two_r), m.c(_PI[1]))
    wide = m.sel(neg, near_minus_one, two_r)
    hi, lo = _HALF_PI
    mid = m.add(m.sub(m.c(hi), m.copysign(r, x)), m.c(lo))
    out = m.sel(big, wide, mid)
    return m.sel(m.cmp(">", m.fabs(x), m.c(1.0)), m.c(math.nan), out)


def _atan(m: _Emit, x):
    """|x| reduced to |t| <= tan(pi/8): beyond tan(3pi/8), t = -1/|x| and pi/2 added; beyond
    tan(pi/8), t = (|x| - 1) / (|x| + 1) and pi/4 added. inf gives pi/2, NaN stays NaN."""
    ax = m.fabs(x)
    far = m.cmp(">", ax, m.c(2.414213562373095))
    mid = m.cmp(">", ax, m.c(0.4142135623730950))
    t = m.sel(mid, m.div(m.sub(ax, m.c(1.0)), m.add(ax, m.c(1.0))), ax)
    t = m.sel(far, m.div(m.c(-1.0), ax), t)
    z = m.mul(t, t)
    y = m.fma(m.mul(t, z), m.poly(z, _ATAN_Q), t)
    base_hi = m.sel(far, m.c(_HALF_PI[0]), m.sel(mid, m.c(_QUARTER_PI[0]), m.c(0.0)))
    base_lo = m.sel(far, m.c(_HALF_PI[1]), m.sel(mid, m.c(_QUARTER_PI[1]), m.c(0.0)))
    return m.copysign(m.add(base_hi, m.add(y, base_lo)), x)


def _atan2(m: _Emit, y, x):
    """atan2(y, x) by octant: a = min(|x|, |y|) / max(|x|, |y|) in [0, 1], r = atan(a) (the
    reduction of ``_atan``), then pi/2 - r where |y| > |x| and pi - r where x's sign bit is
    set, the sign of y last. Special values as C's atan2: both zero gives +-0 or +-pi (by the
    sign of x, -0.0 too), both infinite +-pi/4 or +-3pi/4, one infinite +-pi/2, 0 or +-pi;
    NaN in either gives NaN."""
    ax, ay = m.fabs(x), m.fabs(y)
    steep = m.cmp(">", ay, ax)
    lo, hi = m.sel(steep, ax, ay), m.sel(steep, ay, ax)
    a = m.div(lo, hi)
    a = m.sel(m.cmp("==", hi, m.c(0.0)), m.c(0.0), a)                  # 0 / 0
    a = m.sel(m.cmp("==", lo, m.c(math.inf)), m.c(1.0), a)             # inf / inf
    mid = m.cmp(">", a, m.c(0.4142135623730950))
    t = m.sel(mid, m.div(m.sub(a, m.c(1.0)), m.add(a, m.c(1.0))), a)
    z = m.mul(t, t)
    r = m.fma(m.mul(t, z), m.poly(z, _ATAN_Q), t)
    r = m.add(m.sel(mid, m.c(_QUARTER_PI[0]), m.c(0.0)),
              m.add(r, m.sel(mid, m.c(_QUARTER_PI[1]), m.c(0.0))))
    r = m.sel(steep, m.add(m.sub(m.c(_HALF_PI[0]), r), m.c(_HALF_PI[1])), r)
    xbits = m.b.bitcast(x, m.ity)
    left = m.b.icmp_signed("<", xbits, m.ci(0))
    r = m.sel(left, m.add(m.sub(m.c(_PI[0]), r), m.c(_PI[1])), r)
    out = m.copysign(r, y)
    nan = m.b.fcmp_unordered("uno", x, y)
    return m.sel(nan, m.add(x, y), out)


_IMPL = {"exp": _exp, "log": _log, "tanh": _tanh, "erf": _erf, "sigmoid": _sigmoid,
         "sin": lambda m, x: _sincos(m, x, "sin"), "cos": lambda m, x: _sincos(m, x, "cos"),
         "asin": _asin, "acos": _acos, "atan": _atan}


def _int_power(m: _Emit, x, n: int):
    """``x**n`` for a positive integer ``n`` by repeated squaring (signs, zeros, infinities and
    NaN come out of the multiplications as C's ``pow`` gives them)."""
    out, sq = None, x
    while n:
        if n & 1:
            out = sq if out is None else m.mul(out, sq)
        n >>= 1
        if n:
            sq = m.mul(sq, sq)
    return out


def _root_power(m: _Emit, ax, c: float):
    """``ax**c`` for ``ax >= 0`` and ``c`` a multiple of 1/4 (not an integer): whole powers by
    multiplication, the quarters by one or two square roots."""
    whole, quarters = int(c // 1), round((c % 1) * 4)
    s = m.cg._intrin("llvm.sqrt", [ax])
    frac = {1: None, 2: s, 3: None}[quarters]
    if quarters != 2:
        q = m.cg._intrin("llvm.sqrt", [s])
        frac = q if quarters == 1 else m.mul(s, q)
    return frac if whole == 0 else m.mul(_int_power(m, ax, whole), frac)


def pow_const_exponent(cg, x, c: float) -> ir.Value | None:
    """Inline IR for ``pow(x, c)`` with a constant exponent ``c`` and float32 ``x`` (scalar or
    vector), or None where ``c`` is not finite (llvm.pow then). Instead of a libm ``powf`` per
    lane: integers ``|c| <= 64`` by multiplications (a few ulp), multiples of 1/4 with
    ``|c| <= 8`` by square roots (``x**0.75 = sqrt(x) * sqrt(sqrt(x))``), any other ``c`` as
    ``exp(c * log|x|)`` (relative error about ``1.2e-7 * (1 + |c log x|)``: float32 rounding of
    the exponent); a negative ``c`` is one division more. Special values as C's ``pow``: ``x**0`` is 1 (NaN too),
    ``x < 0`` gives NaN unless ``c`` is an integer (then the sign of an odd power), ``-0.0`` and
    ``-inf`` raised to a non-integer are those of ``+0.0`` and ``+inf``, ``0**-c`` is inf."""
    if not math.isfinite(c):
        return None
    m = _Emit(cg, x.type)
    if c == 0:
        return m.c(1.0)
    mag = abs(c)
    integer = mag == int(mag)
    if integer and mag <= 64:
        r = _int_power(m, x, int(mag))
        return r if c > 0 else m.div(m.c(1.0), r)
    ax = m.fabs(x)
    if mag * 4 == int(mag * 4) and mag <= 8:
        r = _root_power(m, ax, mag)
        if c < 0:
            r = m.div(m.c(1.0), r)
    else:
        r = _exp(m, m.mul(_log(m, ax), m.c(c)))
    if integer:  # (an odd power keeps the sign of x; an even one is positive)
        return m.copysign(r, x) if int(mag) % 2 else r
    # negative x (not -inf): NaN; -0.0 and -inf were taken by their magnitude above
    negative = m.b.and_(m.cmp("<", x, m.c(0.0)), m.cmp("!=", x, m.c(-math.inf)))
    return m.sel(negative, m.c(math.nan), r)


def emit(cg, name: str, x) -> ir.Value:
    """Inline IR computing ``name(x)`` for a float32 scalar or vector ``x``."""
    return _IMPL[name](_Emit(cg, x.type), x)


BINARY_FUNCS = ("atan2",)


def emit_binary(cg, name: str, a, b) -> ir.Value:
    """Inline IR computing ``name(a, b)`` for float32 scalars or vectors of one type."""
    return {"atan2": _atan2}[name](_Emit(cg, a.type), a, b)
