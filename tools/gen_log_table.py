#!/usr/bin/python3
"""tools/gen_log_table.py — the table of core/softmax_row.c's logarithm, printed as C.

[0x1.6p-1, 0x1.6p0) is cut into 128 subintervals (the 80 below 1 of width 2^-8, the
48 above of width 2^-7), as the bits of x - 0x1.6p-1 index them. For each, a point c
near its middle is chosen such that 1/c is a double (invc) and log c lies within a
small fraction of an ulp of a double (logc): invc is tried at the double nearest
1 / middle and at its neighbours, up to 2^15 of them on each side, and the one
whose log c is nearest a double kept (all within 0.03 ulp but the seven just below 1,
up to 0.29; each line's comment says). Also c
itself as a pair of doubles, hi + lo, exact to about 2^-106. From exact rational
arithmetic and 60-digit decimal logarithms (the standard library's fractions and
decimal). Takes about ten minutes.
"""
import decimal
import math
from fractions import Fraction

decimal.getcontext().prec = 60
CANDIDATES = 1 << 15
GOOD_ENOUGH = decimal.Decimal(2) ** -11  # of an ulp of log c


def ln(q):
    return (decimal.Decimal(q.numerator) / decimal.Decimal(q.denominator)).ln()


def entry(i):
    if i < 80:
        low, width = Fraction(11, 16) + Fraction(i, 256), Fraction(1, 256)
    else:
        low, width = 1 + Fraction(i - 80, 128), Fraction(1, 128)
    invc0 = float(1 / (low + width / 2))
    best = None
    for m in range(CANDIDATES):
        for invc in ((invc0,) if m == 0 else (invc0 + m * math.ulp(invc0), invc0 - m * math.ulp(invc0))):
            c = 1 / Fraction(invc)
            exact = ln(c)
            logc = float(exact)
            err = (abs(exact - decimal.Decimal(logc)) / decimal.Decimal(math.ulp(logc))
                   if logc != 0.0 else decimal.Decimal(0))
            if best is None or err < best[0]:
                best = (err, invc, c, logc)
        if best[0] < GOOD_ENOUGH:
            break
    err, invc, c, logc = best
    hi = float(c)
    return invc, logc, hi, float(c - Fraction(hi)), float(err)


def main():
    print("/* { 1/c, log c, c as hi + lo } for x - 0x1.6p-1's subinterval i, from "
          "tools/gen_log_table.py */")
    print("static const double attn_log_table[128][4] = {")
    for i in range(128):
        invc, logc, hi, lo, err = entry(i)
        print("    { %s, %s, %s, %s }, /* log c off by %.1e ulp */"
              % (invc.hex(), logc.hex(), hi.hex(), lo.hex(), err))
    print("};")


if __name__ == "__main__":
    main()
