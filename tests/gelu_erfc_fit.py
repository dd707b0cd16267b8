#!/usr/bin/env python3
"""gelu_erfc_fit.py — the coefficients of ops.c's erfc_series (GELU's Φ).

    python3 tests/gelu_erfc_fit.py        # prints the C table, then the first terms left out

erfc(z) for z >= 0 is t · exp(P(u) − z²) with t = 2/(2 + z) and u = 2t − 1 in
(−1, 1]; P(u) = log(erfc(z)/t) + z² is smooth on the whole half-line. This
script fits P by its Chebyshev series on N nodes u_j = cos(π(j + ½)/N):
    c_k = (2/N) Σ_j P(u_j) cos(π k (j + ½)/N),   P ≈ c_0/2 + Σ_{k≥1} c_k T_k(u),
everything in 110-digit decimal arithmetic (the standard library's decimal, no
other package), so the only rounding is the final one to double. P itself:
  z < 3:  erfc(z) = 1 − erf(z), erf by its Taylor series (alternating, so the
          extra digits absorb its cancellation);
  z >= 3: log(erfc(z) e^{z²} √π) is minus the log of Laplace's continued
          fraction z + (1/2)/(z + 1/(z + (3/2)/(z + …))), evaluated from the
          bottom at a depth where it no longer moves: no e^{−z²} to cancel.
ops.c keeps c_0/2 as its first entry and stops at 27 terms, where |c_k| has
fallen below 3e-17 (printed last).
"""
from decimal import Decimal as D, getcontext

getcontext().prec = 110
N = 96       # nodes
TERMS = 27   # coefficients kept

PI = D('3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803482534211706798214808651328230664709384460955058223172535940812848111745028410270193852110555964')
SQRT_PI = PI.sqrt()
TINY = D(10) ** -108


def cos(x):
    x = x % (2 * PI)
    total, term, n = D(0), D(1), 0
    while abs(term) > TINY:
        total += term
        n += 2
        term = -term * x * x / (n * (n - 1))
    return total


def erfc_small(z):
    """1 − erf(z), erf(z) = 2/√π Σ (−1)^n z^{2n+1} / (n! (2n + 1))."""
    total, power, n = D(0), z, 0  # power = z^{2n+1} / n!
    while abs(power) > TINY:
        total += (power if n % 2 == 0 else -power) / (2 * n + 1)
        n += 1
        power = power * z * z / n
    return 1 - 2 / SQRT_PI * total


def log_scaled_erfc(z):
    """log(erfc(z) e^{z²} √π) for z >= 3, by the continued fraction."""
    depth = 4000 if z < 6 else 800
    v = z
    for k in range(depth, 0, -1):
        v = z + (D(k) / 2) / v
    return -v.ln()


def P(u):
    t = (u + 1) / 2
    z = 2 / t - 2
    if z < 3:
        return (erfc_small(z) / t).ln() + z * z
    return log_scaled_erfc(z) - SQRT_PI.ln() - t.ln()


def main():
    values = [P(cos(PI * (2 * j + 1) / (2 * N))) for j in range(N)]
    coef = [sum(values[j] * cos(PI * k * (2 * j + 1) / (2 * N)) for j in range(N)) * 2 / N for k in range(TERMS + 2)]
    coef[0] /= 2
    table = [float(c).hex() for c in coef[:TERMS]]
    print('static const double erfc_series[] = {')
    for i in range(0, TERMS, 3):
        print('    ' + ', '.join(table[i:i + 3]) + ',')
    print('};')
    print('/* left out: %.3g, %.3g */' % (float(coef[TERMS]), float(coef[TERMS + 1])))


if __name__ == '__main__':
    main()
